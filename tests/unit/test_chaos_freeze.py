"""The chaos switch's rule (tidemark.chaos_freeze): frozen partitions planned, never read."""

from __future__ import annotations

from tidemark.chaos_freeze import freeze_partitions
from tidemark.partition_status import PartitionStatus
from tidemark.source_state import PartitionState, PlannedStep, SourceState

G0, G1 = 1_763_800_000_000, 1_763_800_900_000


def _partition(position: int, log_end: int, watermark_ms=G0, cut=None, status=PartitionStatus.ACTIVE) -> PartitionState:
    return PartitionState(position, log_end, watermark_ms, status, G0, next_record_at_least_ms=cut)


def _state(plan_seq, g, partitions, steps=()) -> SourceState:
    return SourceState(plan_seq, G1, "event_time", g, g + 900_000, partitions, steps)


PREVIOUS = _state(4, G0, {0: _partition(100, 150), 1: _partition(40, 60)})


def test_a_frozen_partition_keeps_its_position_and_reads_in_no_step_while_the_rest_is_planned():
    planned = _state(
        6,
        G1,
        {0: _partition(150, 180, watermark_ms=G1, cut=G1 + 900_000), 1: _partition(60, 70, watermark_ms=G1 - 5)},
        steps=(PlannedStep(G0 + 1, G0 + 900_001, {0: 120, 1: 50}), PlannedStep(G1, G1 + 900_000, {0: 150, 1: 60})),
    )
    frozen = freeze_partitions(PREVIOUS, planned, [1])
    assert frozen == _state(
        6,
        G1,
        # Its log end, W_p and status as planned; its position as before; no "next record >= T".
        {0: _partition(150, 180, watermark_ms=G1, cut=G1 + 900_000), 1: _partition(40, 70, watermark_ms=G1 - 5)},
        steps=(PlannedStep(G0 + 1, G0 + 900_001, {0: 120}), PlannedStep(G1, G1 + 900_000, {0: 150})),
    )


def test_nothing_to_do_once_frozen_is_no_batch():
    # Only partition 1 would have been read, G stays, and its log end did not grow.
    planned = _state(5, G0, {0: _partition(100, 150), 1: _partition(60, 60, cut=G1)}, (PlannedStep(G0, G1, {1: 60}),))
    assert freeze_partitions(PREVIOUS, planned, (1,)) is PREVIOUS


def test_a_frozen_partition_whose_log_grew_still_makes_a_batch_to_show_the_stall():
    planned = _state(5, G0, {0: _partition(100, 150), 1: _partition(60, 75)}, (PlannedStep(G0, G1, {1: 60}),))
    frozen = freeze_partitions(PREVIOUS, planned, (1,))
    assert frozen == _state(5, G0, {0: _partition(100, 150), 1: _partition(40, 75)}, (PlannedStep(G0, G1, {}),))


def test_a_frozen_partition_the_topic_does_not_have_changes_nothing():
    planned = _state(5, G1, {0: _partition(150, 150), 1: _partition(60, 60)})
    assert freeze_partitions(PREVIOUS, planned, (7,)) == planned


def test_the_switch_is_the_variable_else_the_file_it_names_while_that_file_exists(tmp_path):
    from tidemark.chaos_freeze import chaos_freeze_setting

    switch = tmp_path / "chaos" / "freeze"
    environ = {"TIDEMARK_CHAOS_FREEZE_FILE": str(switch)}
    assert chaos_freeze_setting(environ) == "", "no file: off"
    switch.parent.mkdir()
    switch.write_text("telemetry:2\n")
    assert chaos_freeze_setting(environ) == "telemetry:2"
    assert chaos_freeze_setting({**environ, "TIDEMARK_CHAOS_FREEZE": "telemetry:1"}) == "telemetry:1", (
        "the variable wins"
    )
    switch.unlink()
    assert chaos_freeze_setting(environ) == ""
    assert chaos_freeze_setting({}) == ""
