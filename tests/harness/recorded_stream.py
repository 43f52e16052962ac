"""A recorded stream state for the watermark page's tests: six hours of live ledger with
partition 2 stalled for the last two (generator.ledger_history), written by delta-spark as the
persist job writes it; the topic on the real broker holding exactly the offsets the ledger saw;
seals; one quality run's reports; a streams.yaml naming it plus a stream never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from generator.ledger_history import LedgerHistory
from harness.persist_job import REPO
from tidemark.hour_report import HourReport, write_hour_report
from tidemark.quality_summary import QualitySummary, SummaryPaths, write_quality_summary
from tidemark.stream_config import StreamConfig, load_stream
from tidemark.table_schemas import LEDGER_COLUMNS, SEALS_COLUMNS, ddl

MINUTE = 60_000
HOUR = 60 * MINUTE
STREAM = "recorded"
UNWRITTEN = "unwritten"
STALLED = 2
IDLE = 3


@dataclass(frozen=True)
class RecordedStream:
    conf_path: Path
    home: Path  # TIDEMARK_HOME: the reports live under home/reports
    lake_root: Path
    stream: StreamConfig
    history: LedgerHistory
    sealed_hours_ms: tuple[int, ...]
    quality_run: str  # the recorded quality run's name (<dag run id>.<task id>)

    def record_time_ms(self, partition: int, offset: int) -> int:
        """The log timestamp the topic gives the record at ``offset`` of ``partition``: each
        batch's records carry the batch's read time minus one minute."""
        return _record_time(self.history, offset)


def _record_time(history: LedgerHistory, offset: int) -> int:
    batch = offset // history.records_per_batch
    return history.start_ms + batch * history.interval_ms - MINUTE


def write_recorded_stream(spark, broker, folder: Path, now_ms: int, secured=None) -> RecordedStream:
    """The recorded state, its topic on ``broker``'s open listener or, with ``secured``
    (harness.secured_kafka.SecuredKafka), on a secured one whose connection the stream names."""
    from spark_jobs.lake.tables import LakeTables

    start = now_ms - now_ms % (5 * MINUTE) - 6 * HOUR
    history = LedgerHistory(
        STREAM,
        partitions=4,
        start_ms=start,
        end_ms=start + 6 * HOUR,
        stalled_partition=STALLED,
        stalled_since_ms=start + 4 * HOUR,
        idle_partition=IDLE,
    )
    topic = f"recorded_page_state_{now_ms}"
    conf_path = _write_conf(folder, secured.bootstrap if secured else broker.bootstrap, topic, secured)
    lake_root = folder / "lake"
    environ = {"TIDEMARK_LAKE_ROOT": str(lake_root), "TIDEMARK_CHECKPOINT_ROOT": str(folder / "checkpoints")}
    stream = load_stream(conf_path, STREAM, environ)

    rows = history.rows()
    tables = LakeTables(spark, stream)
    tables.ensure()
    tables.append(spark.createDataFrame(rows, ddl(LEDGER_COLUMNS)), "ledger", history.writer)
    sealed = tuple(start + h * HOUR for h in range(3))
    seals = [(STREAM, _datetime(h), _datetime(h + 2 * HOUR), _datetime(h + 2 * HOUR), 0) for h in sealed]
    tables.append(spark.createDataFrame(seals, ddl(SEALS_COLUMNS)), "seals", history.writer)

    final_log_ends = {}
    for row in rows:
        final_log_ends[row[2]] = row[6]
    _produce(broker, topic, final_log_ends, history, secured)
    home = folder / "home"
    run = _write_reports(home / "reports" / STREAM, now_ms, start)
    return RecordedStream(conf_path, home, lake_root, stream, history, sealed, run)


def _write_conf(folder: Path, bootstrap: str, topic: str, secured=None) -> Path:
    """streams.yaml with the telemetry stream's settings under two names: the recorded one,
    and one the persist job never wrote (its page must say so)."""
    import re

    telemetry = (REPO / "conf" / "streams.yaml").read_text()
    body = telemetry[telemetry.index("  telemetry:") :]
    # Up to the next stream of the shipped file (a line "  <name>:" at the streams' indent).
    following = re.search(r"^  [a-z_]+:\s*$", body[len("  telemetry:") :], re.MULTILINE)
    body = body[: len("  telemetry:") + following.start()] if following else body
    recorded = body.replace("  telemetry:", f"  {STREAM}:", 1).replace("topic: telemetry", f"topic: {topic}", 1)
    unwritten = body.replace("  telemetry:", f"  {UNWRITTEN}:", 1).replace(
        "topic: telemetry", f"topic: {topic}_unwritten", 1
    )
    if secured is not None:  # the connection's name under the brokers' address (six spaces: source's keys)
        bootstrap = f"{bootstrap}\n      kafka_conn_id: {secured.conn_id}"
    recorded = recorded.replace("${TIDEMARK_KAFKA_BOOTSTRAP:-127.0.0.1:19092}", bootstrap)
    unwritten = unwritten.replace("${TIDEMARK_KAFKA_BOOTSTRAP:-127.0.0.1:19092}", bootstrap)
    path = folder / "streams.yaml"
    path.write_text("streams:\n" + recorded + unwritten)
    return path


def _produce(broker, topic: str, log_ends: dict[int, int], history: LedgerHistory, secured=None) -> None:
    from confluent_kafka import Producer

    broker.create_topic(topic, len(log_ends))
    reach = (
        {**secured.settings, "bootstrap.servers": secured.bootstrap}
        if secured
        else {"bootstrap.servers": broker.bootstrap}
    )
    producer = Producer({**reach, "linger.ms": 20})
    for partition, end in sorted(log_ends.items()):
        for offset in range(end):
            producer.produce(topic, b'{"recorded": true}', partition=partition, timestamp=_record_time(history, offset))
            if offset % 10_000 == 0:
                producer.poll(0)
    assert producer.flush(60) == 0, "records left unsent"


def _write_reports(folder: Path, now_ms: int, start_ms: int) -> str:
    run = f"manual__{datetime.fromtimestamp(now_ms / 1000, tz=UTC).isoformat()}.check"
    runs = folder / "runs" / run
    runs.mkdir(parents=True)
    write_quality_summary(
        runs / "summary.json",
        QualitySummary(
            stream=STREAM,
            run_name=run,
            now_ms=now_ms,
            now="recorded",
            hours=(),
            success=False,
            paths=SummaryPaths(summary_json=str(runs / "summary.json"), summary_html=str(runs / "summary.html")),
        ),
    )
    (runs / "summary.html").write_text("<html><body><h1>recorded quality summary</h1></body></html>")
    hour_ms = start_ms - start_ms % 3_600_000
    write_hour_report(
        folder / "hours" / f"{_datetime(hour_ms).strftime('%Y-%m-%dT%H')}Z.json",
        HourReport(
            stream=STREAM,
            hour=_datetime(hour_ms).strftime("%Y-%m-%dT%H:00:00Z"),
            hour_ms=hour_ms,
            run_name=run,
            checked_at_ms=now_ms,
            sealed_at_ms=None,
            success=False,
            partitions=(),
            summary_html=str(runs / "summary.html"),
        ),
    )
    docs = folder / "gx" / "uncommitted" / "data_docs" / "local_site"
    docs.mkdir(parents=True)
    (docs / "index.html").write_text("<html><body>recorded data docs</body></html>")
    return run


def _datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
