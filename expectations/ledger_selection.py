"""The ledger rows a quality run of some hours needs, chosen on the ledger's columns before any
row becomes a Python object: what keeps a run's cost that of its hours, not of the lake's age.

The ledger gains a row per batch and partition for as long as the stream lives (about 10,000
after 30 days of a 4-partition stream persisted every 3 hours; 35,000 at the demo's 5 minutes).
Read as columns, that is a few milliseconds; as LedgerEntry objects that every check walks, it
was most of what a quality run of one new hour grew by. ``needed_rows`` keeps, with numpy over
the columns:

- **the hours' ranges**: every row whose records carry a checked hour (expectations.hour_scope's
  rule), and per partition every row of any mode that meets [L, H], where [lo, hi] spans those
  ranges, L is the end of the live ranges before lo when they stop short of it, and H the start
  of the first live range after hi. That holds each scope range's live neighbours and
  everything that covers the offsets between them, so the contiguity check
  (expectations.completeness.unread_next_to) and the event-time window
  (expectations.event_window) see exactly what the whole ledger shows around those ranges;
- **the stall rules' rows**: each partition's newest ``stall_window`` live rows by read time
  (all rows tied with the oldest of them too), and the rows where its newest position began
  (the first row at that position and the row before it), which is all that
  tidemark.stall_rules reads of a longer history;
- **where each partition stands**: its furthest live row (tidemark.furthest_live_row);
- **every accepted loss** (they are few, and each is shown);
- one row of every partition, so a run lists every partition the ledger knows.

Positions are compared by rank: Kafka's offsets as they are, Kinesis's fixed-width keys in
their text order (which is their numeric order). A ledger whose position texts differ in width
is not narrowed (``needed_rows`` returns None: read every row), nor is one where a row's read
time is missing, whose order the stall rules would see differently.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tidemark.accepted_loss import ACCEPTED_LOSS_MODE
from tidemark.offset_coverage import LIVE_MODE

HOUR_MS = 3_600_000


def needed_rows(ledger, hours_ms: Sequence[int], stall_window: int) -> np.ndarray | None:
    """Indices (ascending) of the rows of ``ledger`` (a pyarrow Table with
    expectations.ledger_entries.LEDGER_READ_COLUMNS) that a quality run of ``hours_ms`` (hour
    starts, ms since the epoch, UTC) needs, whose checks then answer as on every row; None when
    the ledger cannot be narrowed safely (every row is needed)."""
    columns = _columns(ledger)
    if columns is None:
        return None
    n = ledger.num_rows
    keep = np.zeros(n, dtype=bool)
    keep[columns["mode_accepted"]] = True
    keep[np.unique(columns["partition"], return_index=True)[1]] = True
    scope = _carries_an_hour(columns, np.asarray(sorted(set(hours_ms)), dtype=np.int64))
    keep |= scope
    order = np.argsort(columns["partition"], kind="stable")
    cuts = np.flatnonzero(np.diff(columns["partition"][order])) + 1
    for rows in np.split(order, cuts):
        if not len(rows):
            continue
        if scope[rows].any():
            keep[_around_scope(columns, rows, scope)] = True
        keep[_stall_and_standing(columns, rows, stall_window)] = True
    return np.flatnonzero(keep)


def _columns(ledger) -> dict[str, np.ndarray] | None:
    """The columns the choice reads, as numpy arrays; None when they cannot be ordered safely."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def millis(name: str) -> tuple[np.ndarray, np.ndarray]:
        column = ledger.column(name)
        micros = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        return micros.fill_null(0).to_numpy() // 1000, column.is_valid().to_numpy(zero_copy_only=False)

    read_time, has_read_time = millis("read_time")
    if ledger.num_rows and not has_read_time.all():
        return None
    ranks = _position_ranks(ledger.column("start_offset"), ledger.column("end_offset"))
    if ranks is None:
        return None
    start, end = ranks
    min_event, has_min = millis("min_event_time")
    max_event, has_max = millis("max_event_time")
    summed = pc.add(pc.add(ledger.column("records"), ledger.column("late")), ledger.column("quarantined"))
    data = pc.coalesce(ledger.column("data_records"), summed, pa.scalar(0, pa.int64()))
    mode = ledger.column("mode")
    return {
        "partition": ledger.column("source_partition").to_numpy().astype(np.int64),
        "live": pc.equal(mode, LIVE_MODE).fill_null(False).to_numpy(zero_copy_only=False),
        "mode_accepted": pc.equal(mode, ACCEPTED_LOSS_MODE).fill_null(False).to_numpy(zero_copy_only=False),
        "start": start,
        "end": end,
        "data": pc.cast(data, pa.int64()).to_numpy(),
        "min_event": min_event,
        "max_event": max_event,
        "has_times": has_min & has_max,
        "read_time": read_time,
        "step": pc.cast(ledger.column("step_id"), pa.int64()).fill_null(-1).to_numpy(),
    }


def _position_ranks(start, end) -> tuple[np.ndarray, np.ndarray] | None:
    """start and end positions as int64 numbers in the positions' own order: Kafka's offsets as
    they are, Kinesis's keys by their rank among every key of both columns; None for keys of
    different widths (whose text order would not be their numeric order) or a missing one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if start.null_count or end.null_count:
        return None
    if pa.types.is_integer(start.type) and pa.types.is_integer(end.type):
        return pc.cast(start, pa.int64()).to_numpy(), pc.cast(end, pa.int64()).to_numpy()
    both = pa.chunked_array(start.chunks + end.chunks).combine_chunks()
    widths = pc.min_max(pc.utf8_length(both)).as_py()
    if widths["min"] != widths["max"]:
        return None
    ranks = pc.rank(both, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.int64)
    return ranks[: len(start)], ranks[len(start) :]


def _carries_an_hour(columns: dict[str, np.ndarray], hours: np.ndarray) -> np.ndarray:
    """Rows whose records carry one of ``hours`` (sorted starts): held data, a range, event times
    with min < H + 1h and max >= H for some H (expectations.hour_scope)."""
    candidate = (columns["data"] > 0) & (columns["end"] > columns["start"]) & columns["has_times"]
    if not len(hours):
        return np.zeros(len(candidate), dtype=bool)
    # The first hour H with H + 1h > min is the min's own hour; the row carries it when H <= max.
    first_hour = (columns["min_event"] // HOUR_MS) * HOUR_MS
    at = np.searchsorted(hours, first_hour, side="left")
    carries = at < len(hours)
    carries[carries] = hours[at[carries]] <= columns["max_event"][carries]
    return candidate & carries


def _around_scope(columns: dict[str, np.ndarray], rows: np.ndarray, scope: np.ndarray) -> np.ndarray:
    """Of one partition's ``rows``: every row meeting [L, H] around its scope ranges [lo, hi]."""
    start, end, live = columns["start"][rows], columns["end"][rows], columns["live"][rows]
    in_scope = scope[rows]
    lo, hi = start[in_scope].min(), end[in_scope].max()
    before = live & (start < lo)
    low = min(lo, end[before].max()) if before.any() else lo
    # Strictly after: an empty live row at hi leaves the reach at hi, so the gap ends further on.
    after = live & (start > hi)
    high = max(hi, start[after].min()) if after.any() else hi
    return rows[(start <= high) & (end >= low)]


def _stall_and_standing(columns: dict[str, np.ndarray], rows: np.ndarray, window: int) -> np.ndarray:
    """Of one partition's ``rows``: its live rows the stall rules read and its furthest live row."""
    live = rows[columns["live"][rows]]
    if not len(live):
        return live
    read_time, start, end, step = (columns[name][live] for name in ("read_time", "start", "end", "step"))
    # The stall rules' order: by read time, ties as the ledger's entries are ordered.
    history = live[np.lexsort((step, end, start, read_time))]
    times, ends = columns["read_time"][history], columns["end"][history]
    newest_k = history[times >= times[max(len(history) - window, 0)]]
    other = np.flatnonzero(ends != ends[-1])
    began = history[other[-1] : other[-1] + 2] if len(other) else history[:1]
    furthest = live[np.lexsort((step, read_time, end))[-1:]]
    return np.concatenate([newest_k, began, furthest])
