"""The ledger rows a quality run converts (expectations.ledger_selection) answer every check as
the whole ledger does: on generated ledgers of live runs with gaps, overlaps, idle stretches and
restarts, recovery and backfill rows over the gaps, accepted losses, on Kafka offsets and on
Kinesis keys, for checked hours anywhere in the ledger's time."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from expectations import completeness, stall
from expectations.event_window import event_window
from expectations.hour_scope import hour_scopes
from expectations.ledger_entries import (
    LEDGER_READ_COLUMNS,
    accepted_losses,
    finished_partitions,
    ledger_entries,
    live_position,
)
from expectations.ledger_selection import needed_rows
from expectations.quality_run import _scan_bounds
from tidemark.log_position import KINESIS_SEQUENCE_NUMBERS, position_key
from tidemark.stall_rules import StallRules

HOUR = 3_600_000
T0 = 1_795_000_000_000 // HOUR * HOUR
TS = pa.timestamp("us", tz="UTC")
WINDOW = 4
RULES = StallRules(window=WINDOW, stall_timeout_ms=30 * 60_000, max_partition_lag_ms=HOUR)


def _generated_ledger(chance: random.Random, sparse: bool) -> pa.Table:
    """A few partitions, each read by a live job in batches every few minutes of event time, with
    the accidents a lake meets: idle stretches (empty and same-end rows), gaps and overlaps
    (restarts), recoveries and backfills over parts of the gaps, accepted losses, batches of
    quarantined records only (no event times)."""
    rows = []
    step = 0
    for partition in range(chance.randint(1, 3)):
        position, t = chance.randint(0, 50), T0 + chance.randint(0, HOUR)
        for _ in range(chance.randint(1, 60)):
            step += 1
            t += chance.choice((60_000, 5 * 60_000, 40 * 60_000))
            kind = chance.random()
            if kind < 0.25:  # idle (the log's end holds) or frozen (it grows): the position holds
                backlog = 0
                for _ in range(chance.randint(1, 10)):
                    step, t = step + 1, t + chance.choice((60_000, 5 * 60_000, 40 * 60_000))
                    backlog += chance.choice((0, 0, chance.randint(1, 50)))
                    rows.append(
                        _row(step, partition, "live", position, position, 0, None, t, log_end=position + backlog)
                    )
                continue
            if kind < 0.32:  # a gap: offsets nobody read
                gap = chance.randint(1, 20)
                if chance.random() < 0.6:
                    rows.append(_row(step, partition, "recovery", position, position + gap, gap, t - HOUR, t))
                elif chance.random() < 0.5:
                    rows.append(_row(step, partition, "accepted_loss", position, position + gap, 0, None, t))
                position += gap
            elif kind < 0.37:  # an overlap: a restart read some offsets again
                position = max(0, position - chance.randint(1, 60))
            size = chance.randint(1, 30)
            data = 0 if chance.random() < 0.05 else chance.randint(1, size)
            rows.append(_row(step, partition, "live", position, position + size, data, t - 20 * 60_000, t))
            if chance.random() < 0.05:
                rows.append(_row(step, partition, "backfill", position, position + size, data, t - 20 * 60_000, t))
            position += size
        if chance.random() < 0.5:  # the partition ends idle or frozen for longer than the window
            backlog, grows = 0, chance.random() < 0.7
            for _ in range(chance.randint(WINDOW + 1, 15)):
                step, t = step + 1, t + chance.choice((60_000, 5 * 60_000, 40 * 60_000))
                backlog += chance.randint(1, 50) if grows else 0
                rows.append(_row(step, partition, "live", position, position, 0, None, t, log_end=position + backlog))
    chance.shuffle(rows)  # the table's files hold rows in no particular order
    positions = pa.string() if sparse else pa.int64()

    def at(value: int):
        return position_key(value * 1_000_003 + 17) if sparse else value

    columns = {name: [] for name in LEDGER_READ_COLUMNS}
    for row in rows:
        for name, value in row.items():
            columns[name].append(at(value) if name.endswith("_offset") and value is not None else value)
    types = {
        "step_id": pa.int64(),
        "source_partition": pa.int32(),
        "start_offset": positions,
        "end_offset": positions,
        "log_end_offset": positions,
        "records": pa.int64(),
        "late": pa.int64(),
        "quarantined": pa.int64(),
        "data_records": pa.int64(),
        **{name: TS for name in ("min_event_time", "max_event_time", "partition_watermark", "global_watermark")},
        "read_time": TS,
    }
    return pa.table({name: pa.array(values, types.get(name, pa.string())) for name, values in columns.items()})


def _row(step, partition, mode, start, end, data, event_ms, read_ms, log_end=None) -> dict:
    times = None if event_ms is None or not data else datetime.fromtimestamp(event_ms / 1000, UTC)
    spread = None if times is None else datetime.fromtimestamp((event_ms + 15 * 60_000) / 1000, UTC)
    read = datetime.fromtimestamp(read_ms / 1000, UTC)
    return {
        "step_id": step,
        "source_partition": partition,
        "mode": mode,
        "start_offset": start,
        "end_offset": end,
        "log_end_offset": end + 3 if log_end is None else log_end,
        "records": data,
        "late": 0,
        "quarantined": 0,
        "data_records": data,
        "min_event_time": times,
        "max_event_time": spread,
        "partition_watermark": spread,
        "global_watermark": spread,
        "read_time": read,
        "partition_status": "IDLE" if start == end else "ACTIVE",
        "writer": f"tidemark:telemetry:{mode}:run",
    }


def _answers(entries, hours, sparse: bool, now_after_ms: int = 0) -> dict:
    """Everything a quality run reads of the ledger, for ``hours``, judged ``now_after_ms``
    after the newest row."""
    positions = KINESIS_SEQUENCE_NUMBERS if sparse else None
    partitions = sorted({e.partition for e in entries})
    scopes = hour_scopes(entries, hours)
    in_scope = {e for scope in scopes for ranges in scope.ranges.values() for e in ranges}
    unread = completeness.unread_next_to(entries)
    live = {p: live_position(entries, p) for p in partitions}
    now = max(e.read_time_ms for e in entries) + now_after_ms
    stall_facts = stall.facts(
        entries,
        partitions,
        RULES,
        now,
        {p: (live[p] or 0) + 5 for p in partitions},
        live,
        **({"position_type": positions} if positions else {}),
    )
    return {
        "partitions": partitions,
        "scopes": scopes,
        "unread": {e: unread.get(e) for e in in_scope},
        "window": event_window(entries, _scan_bounds(scopes)),
        "positions": live,
        "finished": finished_partitions(entries),
        "accepted": accepted_losses(entries),
        "stall": stall_facts,
    }


@pytest.mark.parametrize("sparse", [False, True], ids=["kafka-offsets", "kinesis-sequence-keys"])
def test_the_chosen_rows_answer_every_check_as_the_whole_ledger(sparse):
    chance = random.Random(40)
    narrowed = furthest_not_newest = frozen_for_long = 0
    verdicts = set()
    for _ in range(150):
        ledger = _generated_ledger(chance, sparse)
        every = ledger_entries(ledger)
        span = max(e.read_time_ms for e in every) - T0 + HOUR
        hours = sorted({T0 + chance.randrange(0, span) // HOUR * HOUR for _ in range(chance.randint(0, 3))})
        rows = needed_rows(ledger, hours, WINDOW)
        assert rows is not None
        chosen = ledger_entries(ledger.take(rows))
        narrowed += len(chosen) < len(every)
        later = chance.choice((0, 10 * 60_000, 2 * HOUR))
        answer = _answers(every, hours, sparse, later)
        assert _answers(chosen, hours, sparse, later) == answer, (hours, len(every))
        verdicts.update(fact.verdict.status.value for fact in answer["stall"])
        frozen_for_long += any("read position stuck" in fact.verdict.reason for fact in answer["stall"])
        furthest_not_newest += any(
            live_position(every, p)
            != max((e for e in every if e.partition == p and e.is_live), key=lambda e: e.read_time_ms).end
            for p in answer["partitions"]
            if any(e.partition == p and e.is_live for e in every)
        )
    # The choice leaves rows out, and the ledgers meet the cases it must keep rows for, or this
    # test proves nothing.
    assert narrowed > 100
    assert furthest_not_newest > 5
    assert {"OK", "STALL", "STOP"} <= verdicts
    assert frozen_for_long >= 2 or sparse  # a Kinesis shard counts no growth: never "stuck"


def test_a_month_of_idle_rows_is_not_read_for_one_hour():
    """Ten thousand rows, most of a partition idle at one position: a run of one hour converts
    the hour's ranges, the window's rows and where the idleness began."""
    rows, step = [], 0
    for batch in range(10_000):
        step += 1
        start = min(batch, 100)
        end = start if batch >= 100 else start + 1
        rows.append(_row(step, 0, "live", start, end, end - start, T0 + batch * 60_000, T0 + batch * 60_000 + 1))
    columns = {name: [row[name] for row in rows] for name in LEDGER_READ_COLUMNS}
    ledger = pa.table(
        {
            **{name: pa.array(values) for name, values in columns.items()},
            "source_partition": pa.array(columns["source_partition"], pa.int32()),
        }
    )
    chosen = needed_rows(ledger, [T0], WINDOW)
    assert chosen is not None and len(chosen) < 80
    every, kept = ledger_entries(ledger), ledger_entries(ledger.take(chosen))
    assert _answers(kept, [T0], False) == _answers(every, [T0], False)


def test_position_texts_of_different_widths_are_not_narrowed():
    ledger = _generated_ledger(random.Random(3), sparse=True)
    starts = ledger.column("start_offset").to_pylist()
    starts[0] = starts[0].lstrip("0")
    ledger = ledger.set_column(ledger.schema.get_field_index("start_offset"), "start_offset", pa.array(starts))
    assert needed_rows(ledger, [T0], WINDOW) is None
