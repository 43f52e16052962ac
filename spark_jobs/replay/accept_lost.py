"""The accept-lost job: records that a range lost to retention is accepted as lost, so that the
live job reads on past it (tidemark.accepted_loss).

    python spark_jobs/replay/accept_lost.py --request '<AcceptLostRequest JSON>' [--conf streams.yaml]
        [--result result.json]

Run by the accept-lost DAG (tidemark_airflow.accept_lost_operator) or ``tidemark accept-lost``.
It reads the live position of the partition from the ledger and what the log has lost at it now,
refuses anything that is not a range lost there (exit 2, nothing written), and writes one ledger
row of mode ``accepted_loss``. The row goes through Spark and the lake's Delta writer, as every
other ledger commit does: on S3 the ledger's commits must all come from one kind of writer
(delta-spark's LogStore; delta-rs's conditional writes are not safe beside it, STACK_FACTS.md).

Exit status: 0 written (or the very same range was accepted before: nothing written again),
2 bad input or a range that is not lost now (the message says which, and what to accept instead).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

# spark-submit runs this file as a script: the project's root, not this file's folder, goes first
# on the path (the folder's modules would shadow top-level ones), so it imports when not installed.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from spark_jobs.json_log import configure_json_logging  # noqa: E402
from spark_jobs.request_job import request_arguments, requested_stream  # noqa: E402
from tidemark.accepted_loss import (  # noqa: E402
    ACCEPTED_LOSS_MODE,
    ACCEPTED_LOSS_STATUS,
    AcceptedLoss,
    AcceptLostRefused,
    AcceptLostRequest,
    AcceptLostRequestError,
    AcceptLostResult,
)
from tidemark.event_time_text import format_event_time  # noqa: E402
from tidemark.stream_config import StreamConfig, StreamConfigError, load_streams  # noqa: E402

log = logging.getLogger("tidemark.persist")


def main(argv: list[str] | None = None) -> int:
    configure_json_logging()
    args = request_arguments(
        "accept-lost",
        "Accept a range lost to retention as lost (one ledger row).",
        "an AcceptLostRequest's JSON (tidemark.accepted_loss)",
    ).parse_args(argv)
    try:
        request = AcceptLostRequest.decode(args.request)
        result = accept_lost(requested_stream(load_streams(args.conf), request), request)
    except (StreamConfigError, AcceptLostRequestError, AcceptLostRefused) as error:
        print(f"accept-lost: {error}", file=sys.stderr)
        log.error({"event": "accept_lost_refused", "detail": str(error)})
        return 2
    if args.result:
        args.result.write_bytes(result.encode())
    return 0


def accept_lost(stream: StreamConfig, request: AcceptLostRequest, spark=None, now_ms: int | None = None):
    """Check ``request`` against the ledger and the log now, then write its ledger row; returns
    the AcceptLostResult. AcceptLostRefused, before any write, when the range is not one lost
    at the partition's live position now. ``spark``: a session to use (default: the lake's)."""
    from connectors.accepted_losses import check_against_lake_and_log, read_accepted_losses
    from connectors.lake_storage_check import check_lake_storage
    from spark_jobs.lake.tables import LakeTables

    check_lake_storage(stream)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    position_name = stream.source.position_type.name
    if not check_against_lake_and_log(stream, request, now_ms):
        earlier = next(a for a in read_accepted_losses(stream) if (a.partition, a.start, a.end) == _range(request))
        log.info({"event": "accept_lost_already", "stream": stream.name, "detail": earlier.describe(position_name)})
        return _result(request, earlier.accepted_by, earlier.accepted_at_ms, written=False)
    spark = spark or _session(stream)
    tables = LakeTables(spark, stream)
    _write_row(spark, stream, tables, request, now_ms)
    accepted_now = AcceptedLoss(request.partition, request.start, request.end, request.accepted_by, now_ms)
    log.warning(
        {
            "event": "loss_accepted",
            "stream": stream.name,
            "partition": request.partition,
            "start": str(request.start),
            "end": str(request.end),
            "accepted_by": request.accepted_by,
            "reason": request.reason,
            "detail": f"{accepted_now.describe(position_name)}: the live job reads on after it from its next run; "
            "a loss beyond it still stops the job",
        }
    )
    return _result(request, request.accepted_by, now_ms, written=True)


def _range(request: AcceptLostRequest) -> tuple[int, int, int]:
    return request.partition, request.start, request.end


def _result(request: AcceptLostRequest, by: str, at_ms: int, written: bool) -> AcceptLostResult:
    return AcceptLostResult(
        request.stream,
        request.partition,
        request.start,
        request.end,
        by,
        format_event_time(at_ms),
        written,
        request.reason,
    )


def _session(stream: StreamConfig):
    from connectors.spark_session import lake_spark_session

    return lake_spark_session(f"tidemark-accept-lost-{stream.name}")


def _write_row(spark, stream: StreamConfig, tables, request: AcceptLostRequest, now_ms: int) -> None:
    """One ledger row, [start, end) of the partition, mode accepted_loss; its commit's user
    metadata is the request (the reason among it), for DESCRIBE HISTORY."""
    from datetime import UTC, datetime

    from tidemark.table_schemas import ddl, ledger_columns

    positions = tables.positions
    at = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    row = (
        stream.name,
        0,  # no aligned step: the row was written by a person's decision, not by a batch
        request.partition,
        ACCEPTED_LOSS_MODE,
        positions.to_column(request.start),
        positions.to_column(request.end),
        None,  # no log end was planned against
        0,
        0,
        0,
        None,  # data records: how many the range held is unknowable now
        None,
        None,
        None,
        None,
        ACCEPTED_LOSS_STATUS,
        ACCEPTED_LOSS_MODE,
        at,
        None,
        False,
        AcceptedLoss.writer(stream.name, request.accepted_by),
    )
    frame = spark.createDataFrame([row], ddl(ledger_columns(positions))).coalesce(1)
    metadata = json.dumps({"accepted_loss": request.to_json(), "accepted_at": format_event_time(now_ms)})
    tables.append(frame, "ledger", metadata)


if __name__ == "__main__":
    sys.exit(main())
