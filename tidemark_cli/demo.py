"""``tidemark demo`` (``make demo``): the embedded stack end to end, as a newcomer first sees it.

Starts the broker and Airflow, creates the demo topic, produces a few simulated hours with all
four partition profiles (and some bad records), runs the persist DAG through Airflow's API, and
prints per partition what was produced, persisted and quarantined, then where the UI is.
Idempotent: run it again and it adds another backlog and persists it; that backlog starts after
the stream's global watermark (tidemark_cli.demo_backlog), so none of it is late.

``--stream rides`` runs the same demo on the Kinesis stream of the shipped configuration, on the
stack's loopback Kinesis: the same generator, DAGs and reports, per shard instead of partition.

The demo lives in the CLI, not in the stack: it starts the stack's services, then reads the lake
(connectors.lake_reader) and the quality summary (tidemark.quality_summary) as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from connectors.jars import DEFAULT_GROUPS, ensure_jars, jars_root
from connectors.lake_reader import last_global_watermark_ms
from stack.airflow_api import AirflowApi
from stack.airflow_standalone import AirflowStandalone
from stack.alarm_inbox import AlarmInbox
from stack.environment import tidemark_home
from tidemark.backfill_result import backfill_result_from
from tidemark.dag_ids import persist_dag_id, triggered_dag_id
from tidemark.hour_report import HourReportUnreadable, read_hour_report
from tidemark.offline_devices_result import OfflineDevicesResult, OfflineDevicesResultError
from tidemark.quality_summary import QualitySummaryError, read_quality_summary
from tidemark_cli.checked_hours_line import checked_hours_line
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.demo_backlog import demo_backlog
from tidemark_cli.step_clock import StepClock

DEMO_STREAM = "telemetry"
MINUTE_MS = 60_000


def run_demo(hours: int = 3, bad_records: int = 14, stream_name: str = DEMO_STREAM) -> int:
    """The demo's steps, each timed (StepClock): the services, a backlog, the persist DAG and its
    report, the quality, backfill, offline-device and maintenance DAGs, then where to look. 0 when every DAG
    run it waits for ended; CommandFailed names the one that did not."""
    from tidemark.stream_config import load_stream

    started_ms = int(time.time() * 1000)
    clock = StepClock()
    clock.step("jars")
    ensure_jars(jars_root(), DEFAULT_GROUPS)
    stream = load_stream(os.environ["TIDEMARK_CONF"], stream_name)
    airflow = _start_services(stream, clock)
    reports = tidemark_home() / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    _produce_backlog(stream, hours, bad_records, reports, clock)
    api, password = _run_persist_dag(stream, airflow, clock)
    report_file = _persistence_report(stream, reports, clock)
    summary_html = _run_quality_dag(stream, api, reports, clock, started_ms)
    _run_backfill_dag(stream, api, reports, clock)
    if stream.offline_devices is not None:
        _run_detector_dag(stream, api, clock)
    _run_maintenance_dag(stream, api, clock)
    _print_where_to_look(stream, airflow, password, report_file, summary_html)
    print("\nWhere the demo's time went:")
    print("\n".join(clock.lines()))
    return 0


def _start_services(stream, clock: StepClock) -> AirflowStandalone:
    """The log (Kafka broker or loopback Kinesis, its topic or stream made), the loopback S3 when
    the lake is there, the alarm inbox and Airflow; returns Airflow."""
    _start_log(stream, clock)
    if os.environ.get("TIDEMARK_LAKE_STORE") == "s3":
        from stack.loopback_s3 import LoopbackS3

        _step(
            "Starting the loopback S3 (TIDEMARK_LAKE_STORE=s3: the lake and checkpoints go there)", clock, "loopback S3"
        )
        print(LoopbackS3.from_environment().start())
    _step("Starting the alarm inbox (the streams' alarms arrive there)", clock, "alarm inbox")
    print(AlarmInbox.from_environment().start())
    _step("Starting Airflow", clock, "Airflow start")
    airflow = AirflowStandalone.from_environment()
    print(airflow.start())
    return airflow


def _produce_backlog(stream, hours: int, bad_records: int, reports: Path, clock: StepClock) -> None:
    """A few simulated hours after the stream's global watermark (none when a demo just ran),
    with the generator; its summary goes to ``reports/generated.json`` and, when the log stamps
    records with their arrival (Kinesis), the minutes it arrived in to ``reports/arrived_<stream>.json``
    (the backfill's window)."""
    from tidemark.event_time_text import format_event_time

    backlog = demo_backlog(int(time.time() * 1000), hours, last_global_watermark_ms(stream))
    if backlog is None:
        _step(
            "Producing nothing: the stream's global watermark is within the last minute (a demo just ran)",
            clock,
            "producing",
        )
        return
    _step(
        f"Producing {backlog.hours:g} simulated hours (profiles steady, slow, heavy, bursty; {bad_records} bad records)",
        clock,
        "producing",
    )
    if backlog.note:
        print(backlog.note)
    produced_from_ms = int(time.time() * 1000)
    _run(
        [
            sys.executable,
            "-m",
            "generator",
            "--stream",
            stream.name,
            "backlog",
            "--hours",
            f"{backlog.hours:.6f}",
            "--end",
            format_event_time(backlog.end_ms),
            "--profiles",
            "steady,slow,heavy,bursty",
            "--bad-records",
            str(bad_records),
            "--summary-file",
            str(reports / "generated.json"),
        ],
        quiet=True,
    )
    if stream.source.stamps_arrival_time:
        # Windows are of log times, here arrival times (AT_TIMESTAMP), and the whole backlog
        # arrived now: the backfill below reads the minutes it was produced in.
        arrived = {"arrived_from": produced_from_ms, "arrived_until": int(time.time() * 1000) + MINUTE_MS}
        (reports / f"arrived_{stream.name}.json").write_text(json.dumps(arrived) + "\n")


def _run_persist_dag(stream, airflow: AirflowStandalone, clock: StepClock) -> tuple[AirflowApi, str]:
    """Trigger the persist DAG through Airflow's API and wait for it; returns the API client and
    the admin password it logged in with."""
    dag_id = persist_dag_id(stream)
    _step(f"Running the DAG {dag_id} (Airflow submits the Spark job)", clock, "persist DAG run")
    password = airflow.admin_password()
    if password is None:
        raise CommandFailed(
            f"no admin password in {airflow.password_file}; restart Airflow with `tidemark down airflow` then `tidemark up`"
        )
    api = AirflowApi(airflow.url, "admin", password)
    api.wait_for_dag(dag_id)
    api.unpause(dag_id)
    run_id = api.trigger(dag_id)
    state = api.wait_for_run(dag_id, run_id)
    if state != "success":
        raise CommandFailed(f"the run {run_id} ended {state}; its task log is in the UI: {airflow.url}/dags/{dag_id}")
    print(f"Run {run_id}: {state}")
    return api, password


def _persistence_report(stream, reports: Path, clock: StepClock) -> Path:
    """Print the per-partition (per-shard) report of what the lake holds; returns its JSON file.
    Read without Spark (tidemark_cli.persistence_report): no JVM, no Spark lines, about a second."""
    from tidemark.duration import format_duration_ms
    from tidemark_cli.persistence_report import print_persistence_report

    # Dense offsets can be counted, sparse sequence numbers not.
    _step(
        "Per partition: offsets in the log, offsets with no record, records persisted, late, quarantined, unread"
        if stream.source.position_type.dense
        else "Per shard: its state, records read, persisted, late, quarantined, how far behind the shard's tip",
        clock,
        "persistence report",
    )
    report_file = reports / f"persist_{stream.name}.json"
    print_persistence_report(stream, report_file)
    print(
        f"late: records whose event time was more than the allowed lateness "
        f"({format_duration_ms(stream.event_time.allowed_lateness_ms)}) behind the global watermark when read (their "
        f"hour was already sealed); kept, never dropped, in {stream.table_path('late')} with the "
        f"watermark each met."
    )
    return report_file


def _run_quality_dag(stream, api: AirflowApi, reports: Path, clock: StepClock, since_ms: int):
    """Trigger the quality DAG (its recover DAG unpaused), wait, print each partition's status;
    returns the HTML summary's path. ``since_ms``: when the demo began (ms since the epoch)."""
    quality_dag = f"tidemark_quality__{stream.name}"
    _step(
        f"Running the DAG {quality_dag} (Great Expectations checks per sealed hour and partition)",
        clock,
        "quality DAG run",
    )
    for dag in (quality_dag, triggered_dag_id("recover", stream)):
        api.wait_for_dag(dag)
        api.unpause(dag)
    quality_run = api.trigger(quality_dag)
    quality_state = api.wait_for_run(quality_dag, quality_run)
    summary_html = _print_quality_summary(reports / stream.name / "runs", since_ms)
    print(f"Run {quality_run}: {quality_state} (it fails while a partition is not OK, and triggers its recovery)")
    return summary_html


def _run_backfill_dag(stream, api: AirflowApi, reports: Path, clock: StepClock) -> None:
    """Backfill the backlog's window into a shadow table set and compare it with live: a window
    is of log times: the backlog's event hours where the producer sets them (Kafka's CreateTime),
    the minutes it arrived in where the log stamps arrival (Kinesis)."""
    from tidemark.event_time_text import format_event_time

    backfill_dag = f"tidemark_backfill__{stream.name}"
    if stream.source.stamps_arrival_time:
        _step(
            f"Running the DAG {backfill_dag}: the minutes the backlog arrived in (the log's windows are by "
            "arrival time) read again into a shadow table set, compared with live",
            clock,
            "backfill DAG run",
        )
        arrived = json.loads((reports / f"arrived_{stream.name}.json").read_text())
        window = {
            "start": format_event_time(arrived["arrived_from"] // MINUTE_MS * MINUTE_MS),
            "end": format_event_time(arrived["arrived_until"] // MINUTE_MS * MINUTE_MS),
        }
    else:
        _step(
            f"Running the DAG {backfill_dag}: the backlog's hours read again into a shadow table set, compared with live",
            clock,
            "backfill DAG run",
        )
        generated = json.loads((reports / "generated.json").read_text())
        window = {"start": generated["window_start"], "end": generated["window_end"]}
    api.wait_for_dag(backfill_dag)
    api.unpause(backfill_dag)
    backfill_run = api.trigger(backfill_dag, {**window, "target": "shadow", "compare": True})
    backfill_state = api.wait_for_run(backfill_dag, backfill_run)
    _print_backfill(api.return_value(backfill_dag, backfill_run, "backfill"))
    print(f"Run {backfill_run}: {backfill_state} (it fails when the backfill and live differ, and triggers recovery)")


def _run_detector_dag(stream, api: AirflowApi, clock: StepClock) -> None:
    """Trigger the offline-device detector's DAG over the sealed hours, wait, print its result."""
    detector_dag = f"tidemark_offline_devices__{stream.name}"
    _step(
        f"Running the DAG {detector_dag}: the offline-device detector over the sealed hours (replayable, stateful)",
        clock,
        "offline-devices DAG run",
    )
    run, state, result = _run_scheduled_dag(api, detector_dag, "detect")
    print(f"Run {run}: {state}; {_detector_result(result)}")


def _run_maintenance_dag(stream, api: AirflowApi, clock: StepClock) -> None:
    """Trigger the maintenance DAG (compaction of sealed hours, VACUUM), wait, print its summary."""
    from tidemark.maintenance_result import MaintenanceResult

    maintenance_dag = f"tidemark_maintenance__{stream.name}"
    _step(
        f"Running the DAG {maintenance_dag}: compaction of the sealed hours, then VACUUM",
        clock,
        "maintenance DAG run",
    )
    run, state, result = _run_scheduled_dag(api, maintenance_dag, "maintain")
    print(f"Run {run}: {state}" + (f"; {MaintenanceResult.from_json(result).summary()}" if result else ""))


def _run_scheduled_dag(api: AirflowApi, dag_id: str, task_id: str) -> tuple[str, str, dict | None]:
    """Unpause a scheduled DAG (it goes on running on its schedule), trigger one run now, wait for
    it: the run's id, its end state and ``task_id``'s return value."""
    api.wait_for_dag(dag_id)
    api.unpause(dag_id)
    run = api.trigger(dag_id)
    state = api.wait_for_run(dag_id, run)
    return run, state, api.return_value(dag_id, run, task_id)


def _print_where_to_look(stream, airflow: AirflowStandalone, password: str, report_file: Path, summary_html) -> None:
    """The UI and its login, the DAGs, the watermark page, the lake's tables and the reports."""
    # Not a Path: pathlib would fold s3a://bucket into s3a:/bucket.
    lake = f"{stream.lake.root.rstrip('/')}/{stream.name}"
    print(
        f"\nAirflow UI:  {airflow.url}  (login: admin / {password}; also in {airflow.password_file})\n"
        f"DAG:         {airflow.url}/dags/{persist_dag_id(stream)}  (unpaused: it persists new records on its schedule, {stream.persist.schedule})\n"
        f"Watermarks:  {airflow.url}/tidemark/streams/{stream.name}  (per partition; in the UI under Browse, "
        f"'tidemark watermarks')\n"
        f"Lake tables: {lake}/{{events,late,quarantine,ledger,seals,claims}}\n"
        f"Reports:     {report_file}\n"
        f"Quality:     {summary_html}  (and Data Docs, linked from it)\n"
        f"Backfill:    {airflow.url}/dags/tidemark_backfill__{stream.name}  (Trigger with params for any range; daily "
        f"reconciliation at {stream.backfill.reconcile_schedule} UTC)\n"
        f"Alarms:      {AlarmInbox.from_environment().url}  (the alarm inbox: every alarm the stream's checks sent)\n"
        f"Incident:    tidemark demo --incident  (or make incident: a partition stalls, a person is told, "
        f"recovery puts it right; about 6 minutes)\n"
        f"Stop with:   tidemark down  (or make down)"
    )


def _start_log(stream, clock: StepClock) -> None:
    """Start the embedded service that stands in for the stream's log (``source.local_service``)
    and make its topic or stream. A log made anew cannot be the one an existing lake was read
    from (its positions start again; the loopback Kinesis keeps its streams in memory, so a
    restart does it), so that lake and its checkpoints are moved aside and the demo starts a
    fresh one."""
    import shutil

    from stack.services import service

    source = stream.source
    log_service = service(source.local_service)
    _step(f"Starting {log_service.title}", clock, log_service.title)
    print(log_service.start())
    existed = log_service.has_log(source.log_name)
    print(log_service.create_log(source.log_name, source.created_partitions))
    if existed:
        return
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for folder in (stream.table_path(""), stream.checkpoint_path(""), str(tidemark_home() / "reports" / stream.name)):
        path = Path(folder.rstrip("/"))
        if path.exists() and not folder.startswith("s3"):
            aside = path.with_name(f"{path.name}.before-{stamp}")
            shutil.move(str(path), str(aside))
            print(f"The {source.connection().log_words} is new: the lake read from an earlier one is kept at {aside}")


def _print_backfill(xcom: dict | None) -> None:
    """Print what the backfill read and how it compares with live, per partition-hour (the
    backfill task's XCom, read as the job's typed result)."""
    if not xcom:
        print("(the backfill task returned nothing; see its log in the UI)")
        return
    try:
        result = backfill_result_from(xcom, "the backfill task's result")
    except ValueError as error:
        print(f"({error}; see its log in the UI)")
        return
    print(
        f"Backfilled [{result.start}, {result.end}) into {result.target}: {result.records} records, "
        f"{result.late} late, {result.quarantined} quarantined, {result.batches} batches, "
        f"{result.records_per_second} records/s"
    )
    comparison = result.comparison
    if comparison is None:
        print("Not compared with live (the request did not ask for it)")
        return
    print(
        f"Compared with live: {comparison.compared_hours} partition-hours, {comparison.records_live} records "
        f"in live, {comparison.records_shadow} in the backfill, {len(comparison.differing)} partition-hours differ"
    )
    for hour in comparison.differing:
        print(f"  partition {hour.partition}, hour {hour.hour}: live {hour.live}, backfill {hour.shadow}")


def _detector_result(xcom: dict | None) -> str:
    """What the detector read and found (its task's XCom, read as the job's typed result)."""
    if not xcom:
        return "the detector task returned nothing; see its log in the UI"
    try:
        return OfflineDevicesResult.of(xcom, "the detector task's result").describe()
    except OfflineDevicesResultError as error:
        return f"{error}; see its log in the UI"


def _print_quality_summary(runs: Path, since_ms: int) -> Path | None:
    """Print the hours checked since ``since_ms`` (the demo's start, ms since the epoch) by
    whichever run checked them, and the newest quality run's per-partition status; returns its
    HTML summary's path."""

    summaries = sorted(runs.glob("*/summary.json"), key=lambda path: path.stat().st_mtime)
    if not summaries:
        print("(no quality summary was written; see the check task's log in the UI)")
        return None
    try:
        summary = read_quality_summary(summaries[-1])
    except QualitySummaryError as error:
        print(f"({error})")
        return summaries[-1].with_suffix(".html")
    hour_reports = []
    for path in (runs.parent / "hours").glob("*.json"):
        try:
            hour_reports.append(read_hour_report(path))
        except HourReportUnreadable as error:
            print(f"({error})")
    print(checked_hours_line(hour_reports, since_ms))
    print(f"The newest quality run, {summary.run_name}, per partition:")
    for partition in summary.partitions:
        print(f"  partition {partition.partition}: {partition.status.value:<8} {'; '.join(partition.reasons)}")
    return summaries[-1].with_suffix(".html")


def _step(text: str, clock: StepClock | None = None, timed_as: str | None = None) -> None:
    """Say what the demo does next; with ``clock``, it is a new step named ``timed_as`` there."""
    if clock is not None:
        clock.step(timed_as or text)
    print(f"\n==> {text}", flush=True)


def _run(command: list[str], quiet: bool = False) -> None:
    result = subprocess.run(command, capture_output=quiet, text=True)
    if result.returncode != 0:
        detail = (result.stderr or "")[-2000:] if quiet else ""
        raise CommandFailed(f"`{' '.join(command[1:4])} ...` failed with exit code {result.returncode}\n{detail}")
