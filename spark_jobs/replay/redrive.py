"""The quarantine re-drive job: puts the quarantined records of one reason that now decode into
their place, exactly once.

    python spark_jobs/replay/redrive.py --request '<RedriveRequest JSON>' [--conf streams.yaml]
        [--result result.json]

Run by the redrive DAG (tidemark_airflow.redrive_operator) or by hand. Steps:

1. **Candidates**: the quarantine rows of the request's reason (and log-time hours) whose
   (partition, offset) neither ``events`` nor ``late`` holds: a record moved before is not a
   candidate again, so a second re-drive moves nothing.
2. **Claim** their offsets (tidemark.write_claims) under the live job's G now. A record is
   routed under the G of the earliest *re-drive* claim covering its offset, so its destination
   is one table, whichever re-drive decides it, and when: a rerun after a crash and a
   concurrent re-drive decide the same. (Live does not write a claimed offset; it wrote these,
   to quarantine, long before.)
3. **Decide** each record with the stream's contract as it is now
   (tidemark.quarantine_redrive): the same decoder as live, the same lateness rule under that G,
   as a record live read now would be: a record whose hour is sealed goes to ``late``.
4. **Write** insert-only (Delta MERGE, retried on a concurrent commit): ``events``, then ``late``.
   A crash between them and a rerun leaves each record once; a concurrent re-drive's MERGE and
   this one's cannot both insert a record. The quarantine row stays, the record's history: the
   quality checks count a record that has an events or late row once, there.

Exit status: 0 done (the result says how many moved, and how many still do not decode), 2 bad
input (a request, a configuration), 1 a schema registry that did not answer (one line; nothing
was written, the run can be repeated).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

# spark-submit runs this file as a script: the project's root, not this file's folder, goes first
# on the path (the folder's modules would shadow top-level ones), so it imports when not installed.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from spark_jobs.json_log import configure_json_logging  # noqa: E402
from spark_jobs.request_job import request_arguments, requested_stream  # noqa: E402
from tidemark.crash_points import CLAIMS, crash_points_from_environment  # noqa: E402
from tidemark.event_time_text import format_event_time  # noqa: E402
from tidemark.lateness import LatenessClassifier  # noqa: E402
from tidemark.live_routing import LiveRouting  # noqa: E402
from tidemark.quarantine_redrive import Moved, QuarantinedRecord, Redriven, redrive  # noqa: E402
from tidemark.redrive_request import RedriveRequest, RedriveRequestError  # noqa: E402
from tidemark.redrive_result import RedriveResult  # noqa: E402
from tidemark.stream_config import StreamConfig, StreamConfigError, load_streams  # noqa: E402
from tidemark.table_schemas import ddl, events_columns, late_columns  # noqa: E402
from tidemark.write_claims import NO_WATERMARK_MS  # noqa: E402

log = logging.getLogger("tidemark.persist")

HOUR_MS = 3_600_000
MOVED_TO = ("events", "late")  # where a moved record can be; quarantine keeps its history


def main(argv: list[str] | None = None) -> int:
    configure_json_logging()
    args = request_arguments(
        "redrive",
        "Re-drive quarantined records that now decode.",
        "a RedriveRequest's JSON (tidemark.redrive_request)",
    ).parse_args(argv)
    try:
        request = RedriveRequest.decode(args.request)
        stream = requested_stream(load_streams(args.conf), request)
        crash_points = crash_points_from_environment(os.environ)
        if stream.payload.reads_registry:  # the registry's login, where the stream names one
            from tidemark.registry_access import RegistryAccess

            RegistryAccess.of(stream.payload.registry_url, stream.payload.registry_conn_id)
    except (StreamConfigError, RedriveRequestError, ValueError) as error:
        print(f"redrive: {error}", file=sys.stderr)
        return 2
    try:
        result = run_redrive(stream, request, crash_points)
    except Exception as error:  # a refusal, a registry that was down: one line (spark_jobs.query_failure); else raised
        from spark_jobs.query_failure import exit_for_failure

        return exit_for_failure("redrive", stream.name, error)
    if args.result:
        args.result.write_bytes(result.encode())
    return 0


def run_redrive(stream: StreamConfig, request: RedriveRequest, crash_points=(), spark=None) -> RedriveResult:
    """Re-drive ``request``'s records of ``stream``; returns what moved, counted from this run's
    own MERGE commits. ``spark``: a session to use (default: the lake's, made here)."""
    from connectors.lake_storage_check import check_lake_storage
    from connectors.spark_session import lake_spark_session
    from spark_jobs.crash_switch import CrashSwitch
    from spark_jobs.lake.claims_table import ClaimsTable
    from spark_jobs.lake.tables import LakeTables
    from spark_jobs.schema_following import follow_registry

    check_lake_storage(stream)
    stream = follow_registry(stream)  # a stream that follows its registry: its columns as of now
    spark = spark or lake_spark_session(f"tidemark-redrive-{stream.name}")
    tables = LakeTables(spark, stream)
    tables.ensure()
    switch = CrashSwitch(tuple(crash_points))
    switch.batch_started()
    records = _candidates(tables, request)
    log.info({"event": "redrive_candidates", "stream": stream.name, "reason": request.reason, "records": len(records)})
    decided, inserted = Redriven(), {"events": 0, "late": 0}
    if records:
        ranges = _spans(records)
        # Routed under live's G now, fixed by the first re-drive claim of each offset: a record
        # whose hour has been sealed since goes to late, and every re-drive decides the same.
        # Only the re-driven offsets are claimed: a hole between two of them keeps the routing a
        # recovery would give it.
        claim = ClaimsTable(spark, tables).claim(
            stream.name,
            "redrive",
            ranges,
            (),
            tables.last_live_global_watermark_ms(),
            routed_by=("redrive",),
            only=_runs(records),
        )
        switch.committed(CLAIMS, batch_level=False)
        routing = LiveRouting(claim.routing)
        decided = redrive(
            records,
            _decoder(stream),
            routing.global_watermark_at,
            LatenessClassifier(stream.event_time.allowed_lateness_ms),
            _erased(spark, stream, tables, ranges),
        )
        for table, moved in (("events", decided.events), ("late", decided.late)):
            if moved:
                frame = _rows(spark, stream, table, moved)
                inserted[table] = tables.insert_missing(
                    frame, table, _spans([m.record for m in moved]), MOVED_TO
                ).inserted
                switch.committed(table)
    window = request.window_ms()
    result = RedriveResult(
        stream=stream.name,
        reason=request.reason,
        hours_from=request.hours_from,
        hours_to=request.hours_to,
        candidates=len(records),
        moved_to_events=inserted["events"],
        moved_to_late=inserted["late"],
        already_moved=len(decided.events) + len(decided.late) - inserted["events"] - inserted["late"],
        still_refused=dict(sorted(decided.still_refused.items())),
        erased=decided.erased,
        event_hours=tuple(sorted({_hour(m.event.event_time_ms) for m in decided.events + decided.late})),
        finished_at=format_event_time(int(time.time() * 1000)),
    )
    log.info(
        {
            "event": "redrive_done",
            "stream": stream.name,
            "reason": request.reason,
            "hours": None if window is None else [request.hours_from, request.hours_to],
            "candidates": result.candidates,
            "moved_to_events": result.moved_to_events,
            "moved_to_late": result.moved_to_late,
            "already_moved": result.already_moved,
            "still_refused": result.still_refused,
        }
    )
    return result


def _erased(spark, stream: StreamConfig, tables, ranges: dict[int, tuple[int, int]]):
    """Whether an erasure names a candidate: its position is erased, or its decoded values meet
    an erasure's predicate (spark_jobs.lake.erasures_table, tidemark.erasure_predicate)."""
    from spark_jobs.lake.erasures_table import ErasuresTable
    from tidemark.erasure_predicate import ErasurePredicateError, parse_predicate

    erasures = ErasuresTable(spark, tables)
    positions = {(p, o) for p, spans in erasures.erased(ranges).items() for s, e in spans for o in range(s, e)}
    predicates = []
    for text in erasures.predicates():
        try:
            predicates.append(parse_predicate(text, stream.payload.columns))
        except ErasurePredicateError as error:  # a column removed from the contract since: no record has it
            log.warning({"event": "erasure_predicate_unreadable", "stream": stream.name, "detail": str(error)})
    return lambda record, event: (
        (record.partition, record.position) in positions
        or any(predicate.matches(event.values) for predicate in predicates)
    )


def _candidates(tables, request: RedriveRequest) -> list[QuarantinedRecord]:
    """The quarantine rows of the request's reason and hours that events and late do not hold."""
    from pyspark.sql import functions as F

    rows = tables.read("quarantine").where(F.col("reason") == request.reason)
    window = request.window_ms()
    if window is not None:
        rows = rows.where((F.unix_millis("log_timestamp") >= window[0]) & (F.unix_millis("log_timestamp") < window[1]))
    key = ["source_partition", "source_offset"]
    moved = tables.read("events").select(*key).unionByName(tables.read("late").select(*key))
    position = tables.positions.from_column
    return [
        QuarantinedRecord(
            partition=row.source_partition,
            position=position(row.source_offset),
            log_timestamp_ms=row.log_timestamp_ms,
            key=None if row.record_key is None else bytes(row.record_key),
            headers=None
            if row.record_headers is None
            else tuple((h.key, None if h.value is None else bytes(h.value)) for h in row.record_headers),
            value=None if row.raw_value is None else bytes(row.raw_value),
            step_id=row.step_id,
            read_time_ms=row.read_time_ms,
        )
        for row in rows.join(moved, key, "left_anti")
        .dropDuplicates(key)  # a record quarantined twice (two writers' rows) is one record
        .select(
            *key,
            F.unix_millis("log_timestamp").alias("log_timestamp_ms"),
            "record_key",
            "record_headers",
            "raw_value",
            "step_id",
            F.unix_millis("read_time").alias("read_time_ms"),
        )
        .orderBy(*key)
        .collect()
    ]


def _spans(records: list[QuarantinedRecord]) -> dict[int, tuple[int, int]]:
    """Per partition, [first, last + 1) of ``records``' positions: what the claim covers."""
    spans: dict[int, tuple[int, int]] = {}
    for r in records:
        low, high = spans.get(r.partition, (r.position, r.position + 1))
        spans[r.partition] = (min(low, r.position), max(high, r.position + 1))
    return spans


def _runs(records: list[QuarantinedRecord]) -> dict[int, list[tuple[int, int]]]:
    """Per partition, ``records``' positions as [start, end) runs of consecutive positions."""
    runs: dict[int, list[tuple[int, int]]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.position)):
        spans = runs.setdefault(r.partition, [])
        if spans and spans[-1][1] == r.position:
            spans[-1] = (spans[-1][0], r.position + 1)
        else:
            spans.append((r.position, r.position + 1))
    return runs


def _decoder(stream: StreamConfig):
    from spark_jobs.log_source.decode_stage import payload_documents
    from tidemark.record_decoder import RecordDecoder

    payload = stream.payload
    return RecordDecoder(
        payload,
        stream.event_time.max_future_skew_ms,
        payload_documents(payload),
        payload_documents(payload, of_key=True),
    )


def _rows(spark, stream: StreamConfig, table: str, moved: list[Moved]):
    """The ``table`` rows (events or late, tidemark.table_schemas) of ``moved``, as live writes them."""
    from datetime import UTC, datetime

    def instant(ms):  # no G (NO_WATERMARK_MS) is stored as null, as claims store it
        return None if ms is None or ms == NO_WATERMARK_MS else datetime.fromtimestamp(ms / 1000, UTC)

    column = stream.source.position_type.to_column
    columns = events_columns(stream.payload, stream.source.position_type)
    rows = []
    for m in moved:
        event_time = instant(m.event.event_time_ms)
        values = {
            "source_partition": m.record.partition,
            "source_offset": column(m.record.position),
            "log_timestamp": instant(m.record.log_timestamp_ms),
            "event_time": event_time,
            "record_key": m.record.key,
            "record_headers": None if m.record.headers is None else [list(h) for h in m.record.headers],
            **m.event.values,
            "step_id": m.record.step_id,
            "event_date": event_time.date(),
            "event_hour": event_time.hour,
            "global_watermark": instant(m.global_watermark_ms),
        }
        rows.append(
            tuple(values[name] for name, _ in columns) + ((values["global_watermark"],) if table == "late" else ())
        )
    schema = late_columns(stream.payload, stream.source.position_type) if table == "late" else columns
    return spark.createDataFrame(rows, ddl(schema))


def _hour(ms: int) -> str:
    return format_event_time(ms - ms % HOUR_MS)[:19] + "Z"


if __name__ == "__main__":
    sys.exit(main())
