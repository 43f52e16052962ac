"""Which offsets of the log the lake holds: the rows of events, late and quarantine, by
(source_partition, source_offset), counted against offset ranges.

Every record the persist job read lands in exactly one of the three tables, so together they
are what was persisted. One exception is counted as what it is: a quarantined record that a
re-drive (spark_jobs/replay/redrive.py) has since written to events or late keeps its quarantine
row as its history, and that row is not a second copy: where an offset has an events or late
row, its quarantine rows are not counted (neither as rows nor as quarantined); counting them per ledger range is what completeness compares with the
range's data records. The scan reads only the two identity columns and the offsets the checked
ranges cover (Delta skips files by their min/max statistics on those columns), is cached for
the run, and each question below is one Spark job whose answer is small. This is the sweep's
reader (expectations.lake_facts.SparkLakeFacts); a regular run asks the same questions of
expectations.persisted_offset_index, without Spark.

Positions go into filters and come out of rows through the stream's PositionType (Kafka: BIGINT
offsets; Kinesis: ordered text keys of sequence numbers); answers are ints either way.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.offset_coverage import OffsetRange

PERSISTED_TABLES = ("events", "late", "quarantine")
# A stream's erased records (tidemark erase) are counted where they were: one row each in the
# erasures table, from a stream's first erasure on. Counted as held, not missing; an erased record
# that a table holds again counts twice, a duplicate the uniqueness check names.
ERASURES = "erasures"

# A deficient range with more separate missing spans than this is reported (and replayed) whole:
# listing every span is no longer cheap, and replaying the range is safe (inserts are insert-only).
MAX_SPANS_PER_RANGE = 1000


@dataclass(frozen=True)
class ScopeCount:
    """The persisted rows in one set of disjoint spans of one partition."""

    rows: int  # rows in events + late + quarantine (a re-driven record's quarantine row not counted)
    distinct_offsets: int
    duplicated_offsets: int  # offsets with more than one row
    duplicated_sample: tuple[int, ...]  # the first few such offsets, ascending
    quarantined: int  # rows of the quarantine table whose record is in neither events nor late


class PersistedOffsets:
    """The identity of every persisted row whose offset lies in ``bounds`` (per partition, one
    covering [start, end)), positions of type ``positions``, and of every erased record when
    ``erasures`` (the stream has an erasures table); call ``release()`` when done."""

    def __init__(
        self,
        spark,
        read_table,
        bounds: dict[int, OffsetRange],
        positions: PositionType = KAFKA_OFFSETS,
        erasures: bool = False,
    ):
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        self._spark = spark
        self._positions = positions
        column = positions.to_column
        frames = [
            read_table(table).select(
                F.col("source_partition").alias("partition"),
                F.col("source_offset").alias("offset"),
                F.lit(index).cast("tinyint").alias("source_table"),
            )
            for index, table in enumerate(PERSISTED_TABLES + ((ERASURES,) if erasures else ()))
        ]
        rows = frames[0]
        for frame in frames[1:]:
            rows = rows.unionByName(frame)
        condition = F.lit(False)
        for partition, span in sorted(bounds.items()):
            condition = condition | (
                (F.col("partition") == partition)
                & (F.col("offset") >= column(span.start))
                & (F.col("offset") < column(span.end))
            )
        self._rows = rows.filter(condition).persist(StorageLevel.MEMORY_AND_DISK)

    def release(self) -> None:
        self._rows.unpersist()

    def distinct_per_range(self, ranges: dict[Hashable, tuple[int, OffsetRange]]) -> dict[Hashable, int]:
        """For each key's (partition, [start, end)): how many distinct offsets have a row.

        Distinct, so that a duplicated row cannot make up for a missing one."""
        from pyspark.sql import functions as F

        if not ranges:
            return {}
        keys = list(ranges)
        spans = self._spans_frame([(index, *ranges[key]) for index, key in enumerate(keys)])
        counted = self._join(spans).groupBy("range_id").agg(F.countDistinct("offset").alias("persisted")).collect()
        found = {row.range_id: row.persisted for row in counted}
        return {key: found.get(index, 0) for index, key in enumerate(keys)}

    def count_in_spans(self, scopes: dict[Hashable, tuple[int, Sequence[OffsetRange]]]) -> dict[Hashable, ScopeCount]:
        """For each key's (partition, disjoint spans): rows, distinct and duplicated offsets,
        quarantined rows."""
        from pyspark.sql import functions as F

        if not scopes:
            return {}
        keys = list(scopes)
        spans = self._spans_frame(
            [(index, scopes[key][0], span) for index, key in enumerate(keys) for span in scopes[key][1]]
        )
        counted_rows = (
            self._join(spans)
            .groupBy("range_id", "offset")
            .agg(F.count("*").alias("all"), F.sum((F.col("source_table") == 2).cast("int")).alias("all_q"))
        )
        # A re-driven record: its quarantine rows are history where events or late holds it.
        redriven = F.col("all") > F.col("all_q")
        per_offset = counted_rows.select(
            "range_id",
            "offset",
            F.when(redriven, F.col("all") - F.col("all_q")).otherwise(F.col("all")).alias("n"),
            F.when(redriven, F.lit(0)).otherwise(F.col("all_q")).alias("q"),
        )
        counted = per_offset.groupBy("range_id").agg(
            F.sum("n").alias("rows"),
            F.count("*").alias("distinct_offsets"),
            F.sum((F.col("n") > 1).cast("int")).alias("duplicated"),
            F.slice(F.sort_array(F.collect_list(F.when(F.col("n") > 1, F.col("offset")))), 1, 10).alias("sample"),
            F.sum("q").alias("quarantined"),
        )
        found = {row.range_id: row for row in counted.collect()}
        result = {}
        for index, key in enumerate(keys):
            row = found.get(index)
            result[key] = (
                ScopeCount(
                    row.rows,
                    row.distinct_offsets,
                    row.duplicated,
                    tuple(self._positions.from_column(v) for v in row.sample),
                    row.quarantined,
                )
                if row is not None
                else ScopeCount(0, 0, 0, (), 0)
            )
        return result

    def missing_spans(self, ranges: dict[Hashable, tuple[int, OffsetRange]]) -> dict[Hashable, list[OffsetRange]]:
        """For each key's (partition, [start, end)): the offsets of the range no row holds, as
        spans in order. Offsets that never held a data record (markers, aborted or compacted
        offsets) are in them too: the lake cannot tell them apart, only the log can. A range
        with more than MAX_SPANS_PER_RANGE spans comes back whole.

        Sparse positions (Kinesis sequence numbers): which sequence numbers of a range held the
        missing records only the log knows, so each range comes back whole."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        if not ranges:
            return {}
        if not self._positions.dense:
            return {key: [whole] for key, (_, whole) in ranges.items()}
        keys = list(ranges)
        spans = self._spans_frame([(index, *ranges[key]) for index, key in enumerate(keys)])
        offsets = self._join(spans).select("range_id", "offset").distinct()
        by_offset = Window.partitionBy("range_id").orderBy("offset")
        inner = (
            offsets.withColumn("previous", F.lag("offset").over(by_offset))
            .filter(F.col("offset") - F.col("previous") > 1)
            .select("range_id", (F.col("previous") + 1).alias("start"), F.col("offset").alias("end"))
            .withColumn("n", F.row_number().over(Window.partitionBy("range_id").orderBy("start")))
            .filter(F.col("n") <= MAX_SPANS_PER_RANGE + 1)
            .collect()
        )
        edges = {
            row.range_id: (row.low, row.high)
            for row in offsets.groupBy("range_id")
            .agg(F.min("offset").alias("low"), F.max("offset").alias("high"))
            .collect()
        }
        gaps: dict[int, list[OffsetRange]] = {}
        for row in inner:
            gaps.setdefault(row.range_id, []).append(OffsetRange(row.start, row.end))
        result = {}
        for index, key in enumerate(keys):
            _, whole = ranges[key]
            if index not in edges:
                result[key] = [whole]
                continue
            low, high = edges[index]
            missing = sorted(gaps.get(index, []))
            if low > whole.start:
                missing.insert(0, OffsetRange(whole.start, low))
            if high + 1 < whole.end:
                missing.append(OffsetRange(high + 1, whole.end))
            result[key] = [whole] if len(missing) > MAX_SPANS_PER_RANGE else missing
        return result

    def _spans_frame(self, rows: list[tuple[int, int, OffsetRange]]):
        column = self._positions.to_column
        return self._spark.createDataFrame(
            [(range_id, partition, column(span.start), column(span.end)) for range_id, partition, span in rows],
            f"range_id INT, span_partition INT, span_start {self._positions.sql_type}, "
            f"span_end {self._positions.sql_type}",
        )

    def _join(self, spans):
        from pyspark.sql import functions as F

        return self._rows.join(
            F.broadcast(spans),
            (F.col("partition") == F.col("span_partition"))
            & (F.col("offset") >= F.col("span_start"))
            & (F.col("offset") < F.col("span_end")),
        )
