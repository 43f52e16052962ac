"""``tidemark demo --incident``: what tidemark is for, on the running demo stack.

One partition stops being read while the others go on: the chaos switch (tidemark.chaos_freeze,
its file under $TIDEMARK_HOME/chaos) freezes it in every persist run, Airflow's included, while
the generator keeps producing on every partition. The quality DAG finds it (STALL, then STOP once
its position has stood still for the stream's stall_timeout), each change of state reaches the
alarm inbox (stack.alarm_inbox), and the recover DAG the quality run triggers replays the unread
range. A STALL's recovery cannot cure a live job that is still stuck: its restart stays frozen,
so the partition becomes STOP. Then the cause is fixed (the switch goes off), the STOP's recovery
replays the rest and restarts live, and the next quality run finds every partition OK.

The steps are timed (StepClock) and what happened is written to
``$TIDEMARK_HOME/reports/incident_<stream>.json`` (tidemark.incident_report): the verdicts, the
alarms as received, the replays as their own commits counted them, and the lake's figures.
Kafka streams only: the figures count offsets.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from stack.airflow_api import AirflowApi
from stack.airflow_standalone import AirflowStandalone
from stack.alarm_inbox import AlarmInbox
from stack.environment import tidemark_home
from tidemark.chaos_freeze import FREEZE_FILE_VARIABLE
from tidemark.dag_ids import persist_dag_id, triggered_dag_id
from tidemark.duration import format_duration_ms
from tidemark.incident_report import IncidentReport, IncidentStep, QualityVerdict, ReplayFigure
from tidemark.quality_summary import QualitySummary, QualitySummaryError, read_quality_summary
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.step_clock import StepClock

DEFAULT_PARTITION = 2
# Quality rounds before giving up on seeing STOP: each is a frozen persist run and a quality run.
MAX_ROUNDS = 5
# Records every partition gets while the incident lasts: the steady profile, 4x (one every 1.25 s).
GENERATOR_ARGUMENTS = ("live", "--duration", "30m", "--profiles", "steady", "--rate-scale", "4")


def run_incident(stream_name: str, partition: int = DEFAULT_PARTITION) -> int:
    """Run the incident on the running stack (see the module); 0 when the partition ended OK
    with every record once, CommandFailed otherwise."""
    from tidemark.stream_config import load_stream

    stream = load_stream(os.environ["TIDEMARK_CONF"], stream_name)
    if not stream.source.position_type.dense:
        raise CommandFailed(f"the incident runs on a Kafka stream (its figures count offsets); {stream.name} is not")
    if partition not in (stream.source.fixed_partitions or ()):
        raise CommandFailed(f"stream {stream.name} has no partition {partition}")
    switch = os.environ.get(FREEZE_FILE_VARIABLE)
    if not switch:
        raise CommandFailed(f"{FREEZE_FILE_VARIABLE} is not set: run it through `tidemark` (the embedded stack)")
    incident = _Incident(stream, partition, Path(switch))
    try:
        report = incident.run()
    finally:
        incident.clean_up()
    path = tidemark_home() / "reports" / f"incident_{stream.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(report.encode())
    print(f"\nThe incident's figures: {path}")
    print("\nWhere the incident's time went:")
    print("\n".join(incident.clock.lines()))
    whole = report.lake_rows == report.lake_offsets == report.log_records
    if report.verdicts[-1].status != "OK" or not whole or report.global_watermark_decreased:
        raise CommandFailed("the incident did not end with the partition OK and every record once; see above")
    return 0


class _Incident:
    """The incident's steps on one stream and partition; ``switch``: the chaos switch's file."""

    def __init__(self, stream, partition: int, switch: Path) -> None:
        self.stream = stream
        self.partition = partition
        self.switch = switch
        self.clock = StepClock()
        self.generator: subprocess.Popen | None = None
        self.runs_folder = tidemark_home() / "reports" / stream.name / "runs"
        self.verdicts: list[QualityVerdict] = []
        self.replays: list[ReplayFigure] = []
        self.alarms_seen = 0
        self.alarms_at_start = 0
        self.started_at = time.time()

    # -- the story ----------------------------------------------------------------------------

    def run(self) -> IncidentReport:
        stream = self.stream
        timeout_ms = stream.quality.stall_timeout_ms
        self._step("The stack: Airflow, the alarm inbox, the DAGs")
        airflow = AirflowStandalone.from_environment()
        if not airflow.is_running():
            raise CommandFailed("Airflow is not running: run `make demo` (or `tidemark up`) first")
        self.inbox = AlarmInbox.from_environment()
        print(self.inbox.start())
        self.alarms_seen = self.alarms_at_start = len(self.inbox.alarms())
        password = airflow.admin_password()
        if password is None:
            raise CommandFailed(f"no admin password in {airflow.password_file}")
        self.api = AirflowApi(airflow.url, "admin", password)
        self.persist_dag = persist_dag_id(stream)
        self.quality_dag = f"tidemark_quality__{stream.name}"
        self.recover_dag = triggered_dag_id("recover", stream)
        for dag in (self.persist_dag, self.quality_dag, self.recover_dag):
            self.api.wait_for_dag(dag)
        # Quality runs once the lake has been read (unpaused, a scheduled DAG runs its latest
        # interval at once): before, its check finds no ledger and fails, an alarm of its own.
        self.api.unpause(self.persist_dag)
        print(
            f"Stream {stream.name}: stall_window {stream.quality.stall_window} rows, stall_timeout "
            f"{format_duration_ms(timeout_ms)} (shortened for the demo stream in conf/streams.yaml; "
            f"a production stream keeps the default 30m). Alarms go to {self.inbox.url}"
        )

        self._step("The generator produces on every partition (one record every 1.25 s each), and stays on")
        self._start_generator()
        self._step(f"A persist run reads every partition, {self.partition} included")
        self._persist()
        for dag in (self.quality_dag, self.recover_dag):
            self.api.unpause(dag)

        self._step(
            f"The chaos switch freezes partition {self.partition}: the persist runs plan it but read nothing of it"
        )
        self.switch.parent.mkdir(parents=True, exist_ok=True)
        self.switch.write_text(f"{stream.name}:{self.partition}\n")
        print(f"{self.switch}: {stream.name}:{self.partition}")
        self._persist()

        status = None
        for round_number in range(1, MAX_ROUNDS + 1):
            self._step(
                f"Round {round_number}: the quality DAG, after a persist run (the partition frozen) if it needs one"
            )
            # STALL needs two frozen rows: this round's run is the second. STOP needs the live
            # rows to show the position still for stall_timeout: the restart, still frozen, may.
            if status is None:
                self._persist()
            else:
                first_s, newest_s = self._rows_at(self.verdicts[-1].position)
                due_s = first_s + timeout_ms / 1000
                if newest_s >= due_s:
                    print(
                        f"The live rows already show offset {self.verdicts[-1].position} still for "
                        f"{newest_s - first_s:.0f} s (the last written by the restarted run, still frozen)"
                    )
                else:
                    if due_s > time.time():
                        print(
                            f"(waiting {due_s - time.time():.0f} s: STOP needs the position still for {format_duration_ms(timeout_ms)})"
                        )
                        time.sleep(max(due_s - time.time(), 0))
                    self._persist()
            status = self._quality()
            if status == "STOP":
                break
            self._wait_for_recovery()
        if status != "STOP":
            raise CommandFailed(f"partition {self.partition} never became STOP in {MAX_ROUNDS} rounds")

        self._step(
            "The STOP's recovery replays the unread range; then the cause is fixed (the switch goes off, the "
            "generator stops) and live restarts"
        )
        # The switch goes off only once the replay has committed: a persist run the schedule
        # starts in between would otherwise read the same offsets first (each record would still
        # be written once, but not by the recovery this step shows).
        self._wait_for_replays()
        self.switch.unlink(missing_ok=True)
        self._stop_generator()
        self._wait_for_recovery()

        self._step("The quality DAG again: every partition")
        self._quality()

        self._step("The figures")
        return self._figures()

    # -- steps --------------------------------------------------------------------------------

    def _step(self, text: str) -> None:
        self.clock.step(text)
        print(f"\n==> {text}", flush=True)

    def _persist(self) -> None:
        """Trigger a persist run and wait for it."""
        run = self.api.trigger(self.persist_dag)
        state = self.api.wait_for_run(self.persist_dag, run)
        if state != "success":
            raise CommandFailed(f"the persist run {run} ended {state}; its log: {self.api_url_of(self.persist_dag)}")
        frozen = "frozen" if self.switch.exists() else "every partition read"
        print(f"Persist run {run}: {state} ({frozen})")

    def _quality(self) -> str:
        """Trigger a quality run, wait, print the partition's status and the alarms that arrived;
        returns the partition's status."""
        triggered_ms = int(time.time() * 1000)
        run = self.api.trigger(self.quality_dag)
        state = self.api.wait_for_run(self.quality_dag, run)
        summary = self._summary_since(triggered_ms)
        statuses = {p.partition: p.status.value for p in summary.partitions}
        mine = next(p for p in summary.partitions if p.partition == self.partition)
        self.verdicts.append(
            QualityVerdict(run, mine.status.value, tuple(mine.reasons_or_reason), statuses, mine.position, mine.log_end)
        )
        others = sorted(p for p, s in statuses.items() if p != self.partition)
        others_text = ", ".join(f"{p} {statuses[p]}" for p in others)
        print(f"Quality run {run}: {state}. Partition {self.partition}: {mine.status.value}; the others: {others_text}")
        for reason in mine.reasons_or_reason:
            print(f"  {reason}")
        for request in summary.recovery_requests:
            ranges = ", ".join(f"[{r.start}, {r.end})" for r in request.ranges)
            print(
                f"  recovery requested: partition {request.partition}, offsets {ranges}, restart live: {request.restart_live}"
            )
        self._print_new_alarms()
        return mine.status.value

    def _wait_for_replays(self, timeout_s: float = 900.0) -> None:
        """Wait until the ``recover`` task of every recover run not yet ended has ended (its
        replay committed), not for the rest of the run (the re-check, the restart)."""
        deadline = time.monotonic() + timeout_s
        for run in self.api.dag_runs(self.recover_dag):
            if run["state"] in ("success", "failed") or _queued_before(run, self.started_at):
                continue
            while time.monotonic() < deadline:
                states = {
                    t["task_id"]: t["state"] for t in self.api.task_instances(self.recover_dag, run["dag_run_id"])
                }
                if states.get("recover") in _ENDED_TASK_STATES or self.api.run_state(
                    self.recover_dag, run["dag_run_id"]
                ) in ("success", "failed"):
                    print(f"Recover run {run['dag_run_id']}: its replay {states.get('recover')}")
                    break
                time.sleep(3)

    def _wait_for_recovery(self) -> None:
        """Wait for the recover runs the incident's quality runs started, note what each replayed,
        then wait for the persist runs they started (the restarts)."""
        known = {replay.run_id for replay in self.replays}
        for run in self.api.dag_runs(self.recover_dag):
            run_id = run["dag_run_id"]
            if run_id in known or _queued_before(run, self.started_at):
                continue
            state = self.api.wait_for_run(self.recover_dag, run_id)
            conf = run.get("conf") or {}
            if conf.get("partition") != self.partition:
                print(f"Recover run {run_id} of partition {conf.get('partition')}: {state}")
                continue
            result = self.api.return_value(self.recover_dag, run_id, "recover") or {}
            replay = ReplayFigure(
                run_id, tuple((r["start"], r["end"]) for r in conf.get("ranges") or ()), int(result.get("inserted", 0))
            )
            self.replays.append(replay)
            ranges = ", ".join(f"[{start}, {end})" for start, end in replay.ranges)
            print(f"Recover run {run_id}: {state}; offsets {ranges} replayed, {replay.inserted} records inserted")
        for run in self.api.dag_runs(self.persist_dag, limit=20):
            if run["state"] in ("success", "failed") or _queued_before(run, self.started_at):
                continue
            state = self.api.wait_for_run(self.persist_dag, run["dag_run_id"])
            frozen = "the partition still frozen" if self.switch.exists() else "every partition read"
            print(f"Persist run {run['dag_run_id']} after the recovery: {state} ({frozen})")

    # -- what the incident reads ---------------------------------------------------------------

    def _rows_at(self, position: int | None) -> tuple[float, float]:
        """The read times (s since the epoch) of the partition's first and newest live ledger rows
        whose position is ``position``: the span the stall rule's STOP measures."""
        from connectors.lake_storage import open_delta_table

        rows = open_delta_table(self.stream.table_path("ledger")).to_pyarrow_table(
            columns=["read_time"],
            filters=[("source_partition", "=", self.partition), ("mode", "=", "live"), ("end_offset", "=", position)],
        )
        times = [moment.timestamp() for moment in rows["read_time"].to_pylist() if moment is not None]
        return (min(times), max(times)) if times else (time.time(), 0.0)

    def _summary_since(self, since_ms: int) -> QualitySummary:
        """The newest quality summary written by a run that checked at or after ``since_ms``."""
        newest = None
        for path in sorted(self.runs_folder.glob("*/summary.json"), key=lambda p: p.stat().st_mtime):
            try:
                summary = read_quality_summary(path)
            except QualitySummaryError:
                continue
            if summary.now_ms >= since_ms:
                newest = summary
        if newest is None:
            raise CommandFailed(f"the quality run wrote no summary under {self.runs_folder}; see its check task's log")
        return newest

    def _print_new_alarms(self) -> None:
        alarms = self.inbox.alarms()
        for kept in alarms[self.alarms_seen :]:
            alarm = kept["alarm"]
            received = datetime.fromtimestamp(kept["received_at_ms"] / 1000).strftime("%H:%M:%S")
            print(f"  alarm received {received} in the inbox: {alarm.get('title')} ({alarm.get('notice')})")
        self.alarms_seen = len(alarms)

    def _figures(self) -> IncidentReport:
        """The lake's figures for the partition, the replays and the verdicts, printed and returned."""
        from connectors.lake_storage import open_delta_table
        from connectors.partitioned_logs import open_log

        # A record of the log is in one of three tables: events, late (behind G's lateness), quarantine.
        offsets = [
            offset
            for table in ("events", "late", "quarantine")
            for offset in open_delta_table(self.stream.table_path(table))
            .to_pyarrow_table(columns=["source_offset"], filters=[("source_partition", "=", self.partition)])[
                "source_offset"
            ]
            .to_pylist()
        ]
        bounds = open_log(self.stream.source.connection()).partition_bounds([self.partition])[self.partition]
        ledger = open_delta_table(self.stream.table_path("ledger")).to_pyarrow_table(
            columns=["read_time", "step_id", "global_watermark"], filters=[("mode", "=", "live")]
        )
        ordered = sorted(
            (row["read_time"], row["step_id"], row["global_watermark"])
            for row in ledger.to_pylist()
            if row["global_watermark"] is not None
        )
        decreased = any(later[2] < earlier[2] for earlier, later in zip(ordered, ordered[1:]))
        frozen_position = next((v.position for v in self.verdicts if v.status in ("STALL", "STOP")), None)
        unread_end = max((end for r in self.replays for _, end in r.ranges), default=None)
        replayed = sum(r.inserted for r in self.replays)
        report = IncidentReport(
            stream=self.stream.name,
            partition=self.partition,
            stall_timeout_ms=self.stream.quality.stall_timeout_ms,
            verdicts=tuple(self.verdicts),
            replays=tuple(self.replays),
            frozen_position=frozen_position,
            unread_end=unread_end,
            replayed=replayed,
            lake_rows=len(offsets),
            lake_offsets=len(set(offsets)),
            log_records=bounds.end - bounds.earliest,
            global_watermark_decreased=decreased,
            alarms=tuple(kept["alarm"] for kept in self.inbox.alarms()[self.alarms_at_start :]),
            steps=tuple(IncidentStep(name, seconds) for name, seconds in self.clock.seconds()),
        )
        sequence = " -> ".join(v.status for v in self.verdicts)
        unread = None if frozen_position is None or unread_end is None else unread_end - frozen_position
        print(f"Partition {self.partition}'s verdicts, run by run: {sequence}")
        print(
            f"Unread while frozen: {unread} offsets [{frozen_position}, {unread_end}); replayed by "
            f"{len(self.replays)} recover runs: {replayed} records (as their own commits counted them)"
        )
        print(
            f"In the lake: {report.lake_rows} rows of partition {self.partition} (events, late and quarantine), "
            f"{report.lake_offsets} distinct offsets; its log holds {report.log_records}: "
            + ("every record once." if report.lake_rows == report.lake_offsets == report.log_records else "NOT whole.")
        )
        print(f"Alarms received: {len(report.alarms)}; G never decreased: {not decreased}")
        return report

    # -- the generator and clean-up ------------------------------------------------------------

    def _start_generator(self) -> None:
        log = tidemark_home() / "reports" / f"incident_generator_{self.stream.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as output:
            self.generator = subprocess.Popen(
                [sys.executable, "-m", "generator", "--stream", self.stream.name, *GENERATOR_ARGUMENTS],
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        print(f"Generator pid {self.generator.pid}, its output in {log}")

    def _stop_generator(self) -> None:
        """Stop producing (SIGINT: the generator flushes what it queued and reports)."""
        if self.generator is None or self.generator.poll() is not None:
            return
        self.generator.send_signal(signal.SIGINT)
        try:
            self.generator.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.generator.kill()
            self.generator.wait()
        print("Generator stopped")

    def clean_up(self) -> None:
        """The switch off and the generator stopped, whatever happened."""
        self.switch.unlink(missing_ok=True)
        self._stop_generator()

    def api_url_of(self, dag_id: str) -> str:
        return f"{AirflowStandalone.from_environment().url}/dags/{dag_id}"


_ENDED_TASK_STATES = ("success", "failed", "upstream_failed", "skipped")


def _queued_at(run: dict) -> float:
    """When the API's run was queued (time.time()); 0 when it does not say."""
    queued = run.get("queued_at") or run.get("start_date")
    return datetime.fromisoformat(queued.replace("Z", "+00:00")).timestamp() if queued else 0.0


def _queued_before(run: dict, moment_s: float) -> bool:
    """Whether the API's run was queued before ``moment_s`` (time.time())."""
    return _queued_at(run) < moment_s
