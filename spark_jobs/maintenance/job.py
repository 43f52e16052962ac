"""Entry point of the maintenance job: keep one stream's lake as cheap to read on day 30 as on day 1.

    spark-submit spark_jobs/maintenance/job.py --stream telemetry [--conf conf/streams.yaml]
        [--result PATH] [--no-vacuum]

First the sealed hours of events with ``maintenance.compact_min_files`` files or more are
compacted, then the ledger and the seals whole when they hold as many
(spark_jobs.maintenance.compaction), then the claims table is settled (finished claims folded
into settled ranges: spark_jobs.maintenance.claims_settling), then every table of the stream is
vacuumed with ``maintenance.vacuum_retain`` (spark_jobs.maintenance.vacuum). This run is what
keeps the ledger and the seals small: tidemark's sessions do not run Delta's auto compaction
(connectors.spark_session). ``--result`` receives a
MaintenanceResult's JSON (tidemark.maintenance_result).

Exit status: 0 done (an hour left to the next run because a writer kept winning is done too:
the result says so); 2 bad arguments or configuration, or a stream whose tables do not exist yet;
1 a failure while running.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

# spark-submit runs this file as a script: the project's root goes first on the path.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from tidemark.maintenance_result import MaintenanceResult  # noqa: E402
from tidemark.stream_config import StreamConfig, StreamConfigError, load_stream  # noqa: E402

log = logging.getLogger("tidemark.maintenance")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--conf", default=str(Path(__file__).resolve().parents[2] / "conf" / "streams.yaml"))
    parser.add_argument("--result", type=Path, help="write the MaintenanceResult's JSON here")
    parser.add_argument("--no-vacuum", action="store_true", help="compact only")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    args = parse_args(argv)
    code, result = maintain_named_stream(args.conf, args.stream, vacuum=not args.no_vacuum)
    if code == 0 and args.result:
        args.result.write_bytes(result.encode())
    return code


def maintain_named_stream(conf: str, name: str, vacuum: bool = True) -> tuple[int, MaintenanceResult | None]:
    """Maintain stream ``name`` of the configuration at ``conf``: (exit status, its result when
    it is 0; the summary printed). 2 with one line on stderr for a stream the file does not
    declare or one with no events table yet. In a driver that maintains several streams
    (spark_jobs/maintenance/family_job.py) the first stream's session serves the next ones."""
    try:
        stream = load_stream(conf, name)
    except (StreamConfigError, ValueError) as error:
        print(f"maintenance: {error}", file=sys.stderr)
        return 2, None
    from connectors.spark_session import lake_spark_session
    from spark_jobs.lake.table_creation import delta_table_exists

    spark = lake_spark_session(f"tidemark-maintenance-{stream.name}")
    if not delta_table_exists(spark, stream.table_path("events")):
        print(
            f"maintenance: stream {stream.name!r} has no events table at {stream.table_path('events')} yet: "
            "nothing to maintain before its first persist run",
            file=sys.stderr,
        )
        return 2, None
    result = run_maintenance(spark, stream, vacuum=vacuum)
    print(result.summary())
    return 0, result


def run_maintenance(spark, stream: StreamConfig, vacuum: bool = True) -> MaintenanceResult:
    """Compact the sealed hours, then VACUUM (unless ``vacuum`` is False); what was done."""
    from spark_jobs.maintenance.claims_settling import settle_claims
    from spark_jobs.maintenance.compaction import compact_sealed_hours, compact_small_tables
    from spark_jobs.maintenance.vacuum import vacuum_tables

    started = time.monotonic()
    compacted = tuple(compact_sealed_hours(spark, stream))
    tables = tuple(compact_small_tables(spark, stream))
    claims = settle_claims(spark, stream)
    vacuumed = tuple(vacuum_tables(spark, stream)) if vacuum else ()
    seconds = round(time.monotonic() - started, 2)
    result = MaintenanceResult(stream.name, compacted, vacuumed, seconds, claims, tables=tables)
    log.info({"event": "maintenance_finished", "stream": stream.name, "summary": result.summary()})
    return result


if __name__ == "__main__":
    sys.exit(main())
