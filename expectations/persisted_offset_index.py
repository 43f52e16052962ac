"""Which positions of the log the lake holds, in memory: the (source_partition, source_offset)
of every row of events, late and quarantine inside the checked ranges, sorted per partition.

The Spark-free twin of expectations.persisted_offsets.PersistedOffsets (same questions, same
answers for the same rows): a sealed hour's ranges hold about a million positions, which sort
and count in numpy in well under a second, where a Spark job per question cost seconds. Each
answer is a binary search over the sorted positions of one partition.

Positions are compared, never subtracted, except to find the missing spans of a dense (Kafka)
range, as the Spark path does. Kinesis sequence numbers stay their fixed-width keys (64 digits,
tidemark.log_position), compared as bytes, which orders them as the numbers are.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from expectations.persisted_offsets import MAX_SPANS_PER_RANGE, ScopeCount
from tidemark.log_position import KAFKA_OFFSETS, PositionType, position_key
from tidemark.offset_coverage import OffsetRange

QUARANTINE_TAG = 2  # the quarantine table's index in expectations.persisted_offsets.PERSISTED_TABLES
SAMPLE = 10  # duplicated positions named per scope, as the Spark path names them


@dataclass(frozen=True)
class _PartitionPositions:
    """One partition's persisted positions: ``unique`` ascending, how many rows each has, how
    many of those are quarantine rows; prefix sums answer any span in two binary searches."""

    unique: np.ndarray
    rows_before: np.ndarray  # rows_before[i]: rows of unique[:i]
    duplicated_before: np.ndarray  # positions of unique[:i] with more than one row
    quarantined_before: np.ndarray
    counts: np.ndarray

    def index(self, position) -> int:
        return int(np.searchsorted(self.unique, position, side="left"))


class PersistedOffsetIndex:
    """Built from three parallel arrays (partition, position key, source table index: 0 events,
    1 late, 2 quarantine) of the rows inside the checked ranges."""

    def __init__(self, partitions: np.ndarray, keys: np.ndarray, tables: np.ndarray, positions: PositionType):
        self._positions = positions
        self._by_partition: dict[int, _PartitionPositions] = {}
        order = np.lexsort((keys, partitions))
        partitions, keys, tables = partitions[order], keys[order], tables[order]
        starts = np.flatnonzero(np.r_[True, partitions[1:] != partitions[:-1]]) if len(partitions) else []
        ends = list(starts[1:]) + [len(partitions)] if len(partitions) else []
        for start, end in zip(starts, ends):
            part_keys = keys[start:end]
            quarantine = (tables[start:end] == QUARANTINE_TAG).astype(np.int64)
            first = np.flatnonzero(np.r_[True, part_keys[1:] != part_keys[:-1]])
            counts = np.diff(np.r_[first, len(part_keys)])
            quarantined = np.add.reduceat(quarantine, first) if len(first) else np.zeros(0, np.int64)
            # A re-driven record: its quarantine rows are history where events or late holds it
            # (as expectations.persisted_offsets counts them).
            redriven = counts > quarantined
            counts = np.where(redriven, counts - quarantined, counts)
            quarantined = np.where(redriven, 0, quarantined)
            self._by_partition[int(partitions[start])] = _PartitionPositions(
                unique=part_keys[first],
                rows_before=np.r_[0, np.cumsum(counts)],
                duplicated_before=np.r_[0, np.cumsum(counts > 1)],
                quarantined_before=np.r_[0, np.cumsum(quarantined)],
                counts=counts,
            )

    def release(self) -> None:
        self._by_partition.clear()

    def _key(self, position: int):
        """A position as the index compares it: an int, or a sequence number's 64-digit key."""
        return position if self._positions.dense else position_key(position).encode()

    def _slice(self, partition: int, span: OffsetRange) -> tuple[_PartitionPositions | None, int, int]:
        held = self._by_partition.get(partition)
        if held is None:
            return None, 0, 0
        return held, held.index(self._key(span.start)), held.index(self._key(span.end))

    def distinct_per_range(self, ranges: dict[Hashable, tuple[int, OffsetRange]]) -> dict[Hashable, int]:
        """For each key's (partition, [start, end)): how many distinct positions have a row."""
        result = {}
        for key, (partition, span) in ranges.items():
            _, low, high = self._slice(partition, span)
            result[key] = high - low
        return result

    def count_in_spans(self, scopes: dict[Hashable, tuple[int, Sequence[OffsetRange]]]) -> dict[Hashable, ScopeCount]:
        """For each key's (partition, disjoint spans): rows, distinct and duplicated positions,
        quarantined rows, and the first duplicated positions in ascending order."""
        result = {}
        for key, (partition, spans) in scopes.items():
            rows = distinct = duplicated = quarantined = 0
            sample: list[int] = []
            for span in spans:
                held, low, high = self._slice(partition, span)
                if held is None or high <= low:
                    continue
                rows += int(held.rows_before[high] - held.rows_before[low])
                distinct += high - low
                duplicated += int(held.duplicated_before[high] - held.duplicated_before[low])
                quarantined += int(held.quarantined_before[high] - held.quarantined_before[low])
                if held.duplicated_before[high] > held.duplicated_before[low]:
                    where = low + np.flatnonzero(held.counts[low:high] > 1)[:SAMPLE]
                    sample.extend(self._value(v) for v in held.unique[where])
            result[key] = ScopeCount(rows, distinct, duplicated, tuple(sorted(sample)[:SAMPLE]), quarantined)
        return result

    def missing_spans(self, ranges: dict[Hashable, tuple[int, OffsetRange]]) -> dict[Hashable, list[OffsetRange]]:
        """For each key's (partition, [start, end)): the offsets no row holds, as spans in order
        (a range with more than MAX_SPANS_PER_RANGE comes back whole). Sparse positions: which
        sequence numbers held the missing records only the log knows, so the range comes back whole."""
        if not self._positions.dense:
            return {key: [whole] for key, (_, whole) in ranges.items()}
        result = {}
        for key, (partition, whole) in ranges.items():
            held, low, high = self._slice(partition, whole)
            if held is None or high <= low:
                result[key] = [whole]
                continue
            present = held.unique[low:high].astype(np.int64)
            breaks = np.flatnonzero(np.diff(present) > 1)[: MAX_SPANS_PER_RANGE + 1]
            missing = [OffsetRange(int(present[i]) + 1, int(present[i + 1])) for i in breaks]
            if int(present[0]) > whole.start:
                missing.insert(0, OffsetRange(whole.start, int(present[0])))
            if int(present[-1]) + 1 < whole.end:
                missing.append(OffsetRange(int(present[-1]) + 1, whole.end))
            result[key] = [whole] if len(missing) > MAX_SPANS_PER_RANGE else missing
        return result

    def _value(self, key) -> int:
        return int(key) if self._positions.dense else int(key.decode())


def position_keys(values, positions: PositionType = KAFKA_OFFSETS) -> np.ndarray:
    """A column of positions as the index sorts them: int64 offsets, or 64-byte sequence keys."""
    if positions.dense:
        return np.asarray(values, dtype=np.int64)
    return np.array([position_key(int(v)).encode() for v in values], dtype=f"S{len(position_key(0))}")
