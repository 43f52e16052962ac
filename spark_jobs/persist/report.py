"""Per-partition persistence report: what the log holds against what the lake holds.

    python -m spark_jobs.persist.report --stream telemetry [--conf conf/streams.yaml] [--json PATH]

For every partition: the offsets in the log (earliest..readable end), those the ledger found
holding no record (transaction markers, aborted transactions, compacted offsets), records
persisted to events, late, quarantined, and the offsets not yet read (lag). Offsets are not
records: on a topic the job read from its earliest offset, the five numbers after the first add
up to it. A person reads it at a glance; ``--json`` writes the same figures for machines.
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
    reports = build_report(spark, stream)
    print(render(stream, reports, sealing_summary(spark, stream)))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps([{**asdict(r), "in_log": r.in_log, "lag": r.lag} for r in reports], indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
