"""Alarms a person keeps reading (tidemark.alarm_memory): one message when a partition enters an
alarm status, reminders no more often than configured, one "resolved"; driven by a manual clock."""

from __future__ import annotations

from tidemark.alarm_memory import (
    CHANGED,
    RAISED,
    REMINDER,
    RESOLVED,
    AlarmMemory,
    AlarmNotice,
    PartitionAlarm,
    due_notices,
)

MINUTE_MS = 60_000
T0 = 1_800_000_000_000  # a quality run's wall-clock time, ms UTC


def _runs(statuses_per_run, every_ms=5 * MINUTE_MS, remind_every_ms=None):
    """Every quality run's notices, one run each ``every_ms`` from T0, memory carried between runs
    as the DAG carries it: encoded and decoded."""
    memory, sent = AlarmMemory(), []
    for run, statuses in enumerate(statuses_per_run):
        notices, memory = due_notices(memory, statuses, T0 + run * every_ms, remind_every_ms)
        memory = AlarmMemory.decode(memory.encode())
        sent.append(notices)
    return sent, memory


def test_a_stop_lasting_40_minutes_sends_one_alarm_the_reminders_configured_and_one_resolved():
    # A quality run every 5 minutes: OK, then partition 2 STOP for 40 minutes (8 runs), then OK.
    runs = [{0: "OK", 1: "OK", 2: "OK"}] + [{0: "OK", 1: "OK", 2: "STOP"}] * 8 + [{0: "OK", 1: "OK", 2: "OK"}] * 2
    stopped_at = T0 + 5 * MINUTE_MS

    sent, memory = _runs(runs, remind_every_ms=15 * MINUTE_MS)

    flat = [(run, notice) for run, notices in enumerate(sent) for notice in notices]
    assert flat == [
        (1, AlarmNotice(2, RAISED, "STOP", None, stopped_at)),
        (4, AlarmNotice(2, REMINDER, "STOP", "STOP", stopped_at)),  # 15 min after the first message
        (7, AlarmNotice(2, REMINDER, "STOP", "STOP", stopped_at)),  # 15 min after the reminder
        (9, AlarmNotice(2, RESOLVED, "OK", "STOP", stopped_at)),
    ]
    assert memory == AlarmMemory()


def test_without_reminders_a_lasting_alarm_is_told_once_and_resolved_once():
    runs = [{0: "HOLE"}] * 12 + [{0: "OK"}]

    sent, _ = _runs(runs, remind_every_ms=None)

    assert [[n.kind for n in notices] for notices in sent] == [[RAISED]] + [[]] * 11 + [[RESOLVED]]


def test_a_move_to_another_alarm_status_is_one_message_and_restarts_the_alarm():
    sent, memory = _runs([{3: "STALL"}, {3: "STALL"}, {3: "STOP"}, {3: "STOP"}], remind_every_ms=None)

    assert [[(n.kind, n.status, n.previous_status) for n in notices] for notices in sent] == [
        [(RAISED, "STALL", None)],
        [],
        [(CHANGED, "STOP", "STALL")],
        [],
    ]
    assert memory.partitions == {3: PartitionAlarm("STOP", T0 + 10 * MINUTE_MS, T0 + 10 * MINUTE_MS)}


def test_passing_statuses_never_alarm_and_a_partition_not_reported_is_not_resolved():
    sent, memory = _runs([{0: "WARN", 1: "LAGGING"}, {0: "LOST", 1: "OK"}, {1: "OK"}, {0: "OK"}])

    assert [[(n.partition, n.kind) for n in notices] for notices in sent] == [
        [],
        [(0, RAISED)],
        [],  # partition 0 not checked this run: still LOST as far as anyone knows
        [(0, RESOLVED)],
    ]
    assert memory == AlarmMemory()


def test_several_partitions_are_told_in_partition_order_each_on_its_own_clock():
    sent, _ = _runs(
        [{5: "STOP", 1: "HOLE"}, {5: "STOP", 1: "HOLE", 0: "LOST"}, {5: "STOP", 1: "OK", 0: "LOST"}],
        every_ms=10 * MINUTE_MS,
        remind_every_ms=20 * MINUTE_MS,
    )

    assert [[(n.partition, n.kind) for n in notices] for notices in sent] == [
        [(1, RAISED), (5, RAISED)],
        [(0, RAISED)],
        [(1, RESOLVED), (5, REMINDER)],
    ]


def test_the_memory_kept_between_runs_survives_its_own_encoding():
    memory = AlarmMemory({2: PartitionAlarm("STOP", T0, T0 + MINUTE_MS), 10: PartitionAlarm("HOLE", T0, T0)})

    assert AlarmMemory.decode(memory.encode()) == memory
    assert AlarmMemory.decode(None) == AlarmMemory.decode("") == AlarmMemory()
