"""Per-partition persistence report: what the log holds against what the lake holds.

    python -m spark_jobs.persist.report --stream telemetry [--conf conf/streams.yaml] [--json PATH]

For every partition: the offsets in the log (earliest..readable end), those the ledger found
holding no record (transaction markers, aborted transactions, compacted offsets), records
persisted to events, late, quarantined, and the offsets not yet read (lag). Offsets are not
records: on a topic the job read from its earliest offset, the five numbers after the first add
up to it. A person reads it at a glance; ``--json`` writes the same figures for machines.

A Kinesis stream's shards have no offsets to count: per shard the report gives its state (open,
closed, finished in the ledger), the data records the ledger read, those persisted, late and
quarantined (the last three add up to the first), and how far behind the shard's tip the lake's
position is (MillisBehindLatest, asked of Kinesis at that position).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from tidemark.stream_config import StreamConfig, StreamConfigError, load_stream


@dataclass(frozen=True)
class PartitionReport:
    partition: int
    log_earliest: int
    log_end: int
    ledger_position: int
    without_data: int  # offsets read that held no data record
    persisted: int
    late: int
    quarantined: int

    @property
    def in_log(self) -> int:
        """Offsets in the log, not records."""
        return self.log_end - self.log_earliest

    @property
    def lag(self) -> int:
        return self.log_end - self.ledger_position


@dataclass(frozen=True)
class ShardReport:
    partition: int
    shard_id: str
    state: str  # open | closed | gone (no longer listed) ; FINISHED when the ledger says so
    read: int  # data records the ledger's ranges held
    persisted: int
    late: int
    quarantined: int
    millis_behind_latest: int | None  # at the lake's position; None: not asked (finished, gone)


def build_kinesis_report(spark, stream: StreamConfig) -> list[ShardReport]:
    """Per shard of a Kinesis stream: what the ledger read and where it went, and the lag in ms."""
    from pyspark.sql import functions as F

    from connectors.kinesis_log import KinesisLog, kinesis_client
    from spark_jobs.lake.tables import LakeTables
    from tidemark.shard_lineage import shard_id_of

    tables = LakeTables(spark, stream)
    persisted = _counts(tables.read("events"))
    late = _counts(tables.read("late"))
    quarantined = _counts(tables.read("quarantine"))
    ledger = tables.read("ledger").where(F.col("mode") == "live")
    read = {
        r.source_partition: r.n
        for r in ledger.groupBy("source_partition").agg(F.sum("data_records").alias("n")).collect()
    }
    newest = (
        ledger.groupBy("source_partition")
        .agg(
            F.max_by("end_offset", "end_offset").alias("position"),
            F.max_by("partition_status", "end_offset").alias("status"),
        )
        .collect()
    )
    positions = {r.source_partition: tables.positions.from_column(r.position) for r in newest}
    statuses = {r.source_partition: r.status for r in newest}
    source = stream.source
    log = KinesisLog(
        source.stream, source.region, source.endpoint, client=kinesis_client(source.region, source.endpoint)
    )
    try:
        shards = log.shards()
        asked = {p: position for p, position in positions.items() if p in shards and statuses.get(p) != "FINISHED"}
        log.fill(asked, None, 1)
        bounds = log.bounds()
        reports = []
        for partition in sorted(set(shards) | set(positions)):
            shard = shards.get(partition)
            state = "gone" if shard is None else ("closed" if shard.closed else "open")
            if statuses.get(partition) == "FINISHED":
                state = "FINISHED"
            reports.append(
                ShardReport(
                    partition,
                    shard.shard_id if shard is not None else shard_id_of(partition),
                    state,
                    int(read.get(partition) or 0),
                    persisted.get(partition, 0),
                    late.get(partition, 0),
                    quarantined.get(partition, 0),
                    bounds[partition].millis_behind_latest if partition in asked and partition in bounds else None,
                )
            )
        return reports
    finally:
        log.close()


def render_kinesis(stream: StreamConfig, reports: list[ShardReport], sealing: str) -> str:
    columns = (
        ("shard", 22),
        ("state", 8),
        ("read", 8),
        ("persisted", 10),
        ("late", 6),
        ("quarantined", 11),
        ("behind", 10),
    )
    header = " ".join(f"{name:>{width}}" for name, width in columns)
    lines = [f"stream {stream.name} ({stream.source.description})", header, "-" * len(header)]

    def row(values):
        return " ".join(f"{value:>{width}}" for value, (_, width) in zip(values, columns))

    for r in reports:
        behind = "" if r.millis_behind_latest is None else f"{r.millis_behind_latest / 1000:.1f} s"
        lines.append(row([r.shard_id, r.state, r.read, r.persisted, r.late, r.quarantined, behind]))
    lines.append("-" * len(header))
    lines.append(
        row(
            [
                "total",
                "",
                *(sum(getattr(r, a) for r in reports) for a in ("read", "persisted", "late", "quarantined")),
                "",
            ]
        )
    )
    lines.append(
        "read = persisted + late + quarantined; 'behind' is Kinesis's MillisBehindLatest at the lake's position"
    )
    lines.append(sealing)
    return "\n".join(lines)


def build_report(spark, stream: StreamConfig) -> list[PartitionReport]:
    from connectors.kafka_log import KafkaLog
    from spark_jobs.lake.tables import LakeTables

    tables = LakeTables(spark, stream)
    persisted = _counts(tables.read("events"))
    late = _counts(tables.read("late"))
    quarantined = _counts(tables.read("quarantine"))
    positions, without_data = _ledger_figures(tables.read("ledger"))
    log = KafkaLog(stream.source.bootstrap_servers, stream.source.topic)
    try:
        reports = []
        for partition, bounds in log.partition_bounds().items():
            reports.append(
                PartitionReport(
                    partition,
                    bounds.earliest,
                    bounds.end,
                    positions.get(partition, bounds.earliest),
                    without_data.get(partition, 0),
                    persisted.get(partition, 0),
                    late.get(partition, 0),
                    quarantined.get(partition, 0),
                )
            )
        return reports
    finally:
        log.close()


def _ledger_figures(ledger) -> tuple[dict[int, int], dict[int, int]]:
    """Per partition: the position the ledger reached, and the offsets it read without a record
    (rows written before the ledger had data_records count their persisted rows instead)."""
    from pyspark.sql import functions as F

    data_records = F.coalesce(F.col("data_records"), F.col("records") + F.col("late") + F.col("quarantined"))
    rows = ledger.groupBy("source_partition").agg(
        F.max("end_offset").alias("position"),
        F.sum(F.col("end_offset") - F.col("start_offset") - data_records).alias("without_data"),
    )
    figures = rows.collect()
    return {r.source_partition: r.position for r in figures}, {r.source_partition: r.without_data for r in figures}


def _counts(frame) -> dict[int, int]:
    return {row.source_partition: row["count"] for row in frame.groupBy("source_partition").count().collect()}


def render(stream: StreamConfig, reports: list[PartitionReport], sealing: str) -> str:
    columns = (
        ("partition", 9),
        ("offsets", 9),
        ("no record", 9),
        ("persisted", 10),
        ("late", 6),
        ("quarantined", 11),
        ("not yet read", 12),
    )
    header = " ".join(f"{name:>{width}}" for name, width in columns)
    lines = [f"stream {stream.name} (topic {stream.source.topic})", header, "-" * len(header)]

    def row(label, values):
        return " ".join(f"{value:>{width}}" for value, (_, width) in zip([label, *values], columns))

    attributes = ("in_log", "without_data", "persisted", "late", "quarantined", "lag")
    for r in reports:
        lines.append(row(r.partition, [getattr(r, a) for a in attributes]))
    lines.append("-" * len(header))
    lines.append(row("total", [sum(getattr(r, a) for r in reports) for a in attributes]))
    if any(r.without_data for r in reports):
        lines.append(
            "offsets are not records: 'no record' counts commit and abort markers, aborted transactions and "
            "compacted offsets the job read past"
        )
    lines.append(sealing)
    return "\n".join(lines)


def sealing_summary(spark, stream: StreamConfig) -> str:
    """One line: the global watermark reached and the hours sealed so far."""
    from pyspark.sql import functions as F

    from spark_jobs.lake.tables import LakeTables

    seals = LakeTables(spark, stream).read("seals").agg(F.count("*").alias("n"), F.max("hour").alias("latest")).first()
    if not seals.n:
        return "sealed hours: none yet"
    return f"sealed hours: {seals.n}, the latest [{seals.latest:%Y-%m-%d %H:00}, +1h) UTC"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="persist_report", description=__doc__.splitlines()[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"))
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    args = parser.parse_args(argv)
    try:
        stream = load_stream(args.conf, args.stream)
    except StreamConfigError as error:
        print(f"persist_report: {error}", file=sys.stderr)
        return 2

    from connectors.spark_session import lake_spark_session

    spark = lake_spark_session(f"tidemark-report-{stream.name}")
    spark.sparkContext.setLogLevel("ERROR")
    # Dense positions (offsets) can be counted: in the log, without a record, not yet read. Sparse
    # ones (sequence numbers) count nothing: that report gives records read and the lag in time.
    if stream.source.position_type.dense:
        reports = build_report(spark, stream)
        print(render(stream, reports, sealing_summary(spark, stream)))
        figures = [{**asdict(r), "in_log": r.in_log, "lag": r.lag} for r in reports]
    else:
        shards = build_kinesis_report(spark, stream)
        print(render_kinesis(stream, shards, sealing_summary(spark, stream)))
        figures = [asdict(r) for r in shards]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
