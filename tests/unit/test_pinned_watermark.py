"""A run under a pinned G (tidemark.pinned_watermark): recovery routes under live's G."""

from __future__ import annotations

from tidemark.partition_status import PartitionStatus
from tidemark.pinned_watermark import pin_global_watermark
from tidemark.source_state import PartitionState, PlannedStep, SourceState

LIVE_G = 1_763_796_400_000  # the G the live job had when the recovery was asked for
G0, G1 = 1_763_800_000_000, 1_763_800_900_000


def _state(plan_seq, g, positions: dict[int, int], steps=()) -> SourceState:
    partitions = {p: PartitionState(position, 500, G0, PartitionStatus.ACTIVE, G0) for p, position in positions.items()}
    return SourceState(plan_seq, G1, "event_time", g, g + 900_000 if g else None, partitions, steps)


def test_the_batch_and_each_of_its_steps_are_routed_under_the_pinned_g():
    previous = _state(2, LIVE_G, {0: 10, 1: 20})
    planned = _state(
        4, G1, {0: 30, 1: 25}, (PlannedStep(G0, G0 + 900_000, {0: 20}), PlannedStep(G1, G1 + 900_000, {0: 30, 1: 25}))
    )
    pinned = pin_global_watermark(previous, planned, {0: 40, 1: 25}, LIVE_G)
    assert pinned == SourceState(
        4,
        G1,
        "event_time",
        LIVE_G,
        G1 + 900_000,
        planned.partitions,
        (PlannedStep(LIVE_G, G0 + 900_000, {0: 20}), PlannedStep(LIVE_G, G1 + 900_000, {0: 30, 1: 25})),
    )


def test_a_run_read_to_its_ends_plans_no_more_batches():
    previous = _state(4, LIVE_G, {0: 40, 1: 25})
    only_g_moves = _state(5, G1, {0: 40, 1: 25})
    assert pin_global_watermark(previous, only_g_moves, {0: 40, 1: 25}, LIVE_G) is previous


def test_a_batch_that_moves_no_position_before_the_ends_is_still_pinned_and_planned():
    previous = _state(4, LIVE_G, {0: 30, 1: 25})
    planned = _state(5, G1, {0: 30, 1: 25})
    pinned = pin_global_watermark(previous, planned, {0: 40, 1: 25}, LIVE_G)
    assert (pinned.global_watermark_ms, pinned.positions(), pinned.plan_seq) == (LIVE_G, {0: 30, 1: 25}, 5)
