"""Per-partition persistence report: what the log holds against what the lake holds.

    python -m spark_jobs.persist_report --stream telemetry [--conf conf/streams.yaml] [--json PATH]

For every partition: records in the log (earliest..end offsets), the position the ledger has
reached, records persisted to events, quarantined, and the records not yet read (lag). A person
reads it at a glance; ``--json`` writes the same figures for machines.
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
    persisted: int
    quarantined: int

    @property
    def in_log(self) -> int:
        return self.log_end - self.log_earliest

    @property
    def lag(self) -> int:
        return self.log_end - self.ledger_position


def build_report(spark, stream: StreamConfig) -> list[PartitionReport]:
    from spark_jobs.kafka_log import KafkaLog
    from spark_jobs.lake_tables import LakeTables

    tables = LakeTables(spark, stream)
    persisted = _counts(tables.read("events"))
    quarantined = _counts(tables.read("quarantine"))
    positions = {
        row.source_partition: row.position
        for row in tables.read("ledger").groupBy("source_partition").agg({"end_offset": "max"}).toDF(
            "source_partition", "position"
        ).collect()
    }
    log = KafkaLog(stream.source.bootstrap_servers, stream.source.topic)
    try:
        reports = []
        for partition in log.partition_ids():
            bounds = log.bounds(partition)
            reports.append(
                PartitionReport(
                    partition,
                    bounds.earliest,
                    bounds.end,
                    positions.get(partition, bounds.earliest),
                    persisted.get(partition, 0),
                    quarantined.get(partition, 0),
                )
            )
        return reports
    finally:
        log.close()


def _counts(frame) -> dict[int, int]:
    return {row.source_partition: row["count"] for row in frame.groupBy("source_partition").count().collect()}


def render(stream: StreamConfig, reports: list[PartitionReport]) -> str:
    header = f"{'partition':>9} {'in log':>10} {'persisted':>10} {'quarantined':>11} {'not yet read':>12}"
    lines = [f"stream {stream.name} (topic {stream.source.topic})", header, "-" * len(header)]
    for r in reports:
        lines.append(f"{r.partition:>9} {r.in_log:>10} {r.persisted:>10} {r.quarantined:>11} {r.lag:>12}")
    total = lambda attribute: sum(getattr(r, attribute) for r in reports)  # noqa: E731
    lines.append("-" * len(header))
    lines.append(f"{'total':>9} {total('in_log'):>10} {total('persisted'):>10} {total('quarantined'):>11} {total('lag'):>12}")
    return "\n".join(lines)


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

    from spark_jobs.spark_session import lake_spark_session

    spark = lake_spark_session(f"tidemark-report-{stream.name}")
    spark.sparkContext.setLogLevel("ERROR")
    reports = build_report(spark, stream)
    print(render(stream, reports))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps([{**asdict(r), "in_log": r.in_log, "lag": r.lag} for r in reports], indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
