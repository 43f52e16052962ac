"""One quality run of one stream: the checks of the given sealed hours (per partition), the
stream-wide stall and retention checks, Data Docs, the summaries, and the recovery requests.

    python expectations/quality_run.py --stream telemetry --conf conf/streams.yaml \\
        --report-dir REPORTS --gx-dir GX --run-name RUN [--hours 2026-11-22T01:00:00Z,...] \\
        [--reconcile | --sweep] [--result result.json] [--now-ms MS]

Without ``--hours`` the run reconciles: it checks every hour of the seals table that has no
report yet under ``<report-dir>/<stream>/hours/`` (expectations.checked_hours), and every
checked hour that a commit of the lake's Delta log removed or rewrote rows of since the previous
run (expectations.damage_scan; the versions read are remembered in
``<report-dir>/<stream>/checked_versions.json`` once the run completed); ``--reconcile`` does
the same in addition to the hours given. ``--sweep`` (the slow schedule's run) checks the
completeness of every sealed hour the source log still retains instead, and writes no hour
report. Log bounds come from the stream's log (connectors.log_bounds: Kafka's ListOffsets, or a
probe of each Kinesis shard at the lake's position). Exit status: 0 when the run completed,
whatever the checks found (the result and the summaries say what failed); 2 for bad arguments, a
bad configuration or missing tables; 1 for anything else (the log unreachable, a ledger that
cannot be read, a Spark failure).

A regular run reads the lake without Spark (expectations.delta_lake_facts: deltalake and
pyarrow, one hour's files), so plain ``python`` runs it, as the quality DAG does. ``--sweep``
reads every hour the log retains with Spark (expectations.lake_facts.SparkLakeFacts): the sweep
DAG runs it through spark-submit.

Where things land:
- ``<report-dir>/<stream>/runs/<run-name>/summary.json`` and ``summary.html``;
- ``<report-dir>/<stream>/hours/<YYYY-MM-DDTHH>Z.json``, one per checked hour;
- ``<gx-dir>/gx/uncommitted/data_docs/local_site/index.html``, GX's Data Docs.

Logs go to the ``tidemark.quality`` logger as dicts (``{"event": ...}``); run as a script, each is
one JSON line on stderr (tidemark.structured_log, as the Spark jobs' lines). GX's own loggers are
held at WARNING.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

# spark-submit runs this file as a script; make the project importable when it is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from expectations import completeness, decoding, gaps, late_and_quarantine, retention, stall, uniqueness
from expectations.check_family import FamilyOutcome, Finding, not_run
from expectations.checked_hours import hour_report_path, unchecked_sealed_hours
from expectations.damage_scan import DamageFound, find_damage, remember_checked, sweep_damage, sweep_hours
from expectations.delta_lake_facts import DeltaLakeFacts
from expectations.event_window import event_window
from expectations.gx_project import GxProject
from expectations.hour_records import HourCounts, with_history
from expectations.hour_scope import HourScope, hour_scopes, hour_text, require_hour_starts
from expectations.lake_damage import DamageKind, LakeDamage, hours_of
from expectations.lake_facts import LakeFacts, SparkLakeFacts
from expectations.late_and_quarantine import LateAndQuarantineFacts
from expectations.ledger_entries import LedgerEntry, accepted_losses, finished_partitions, live_position
from expectations.quality_result import CheckSummary, PartitionQuality, QualityRunResult
from expectations.quality_status import QualityStatus
from expectations.quality_summary import summary_folder, write_summary
from expectations.quality_tables import QualityTablesMissingError
from expectations.quality_verdicts import NO_COUNT, LogBoundsView, hour_figures, partition_quality, recovery_request
from tidemark.event_time_text import parse_event_time
from tidemark.hour_report import HourReport, write_hour_report
from tidemark.log_position import PositionType
from tidemark.offset_coverage import OffsetRange, merge_ranges
from tidemark.quality_look import last_check_of, remember_check
from tidemark.quality_summary import write_quality_summary
from tidemark.stream_config import StreamConfig, StreamConfigError, load_stream
from tidemark.structured_log import configure_json_logging

log = logging.getLogger("tidemark.quality")

_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,199}$")


def run_quality(
    lake: LakeFacts,
    stream: StreamConfig,
    hours: Sequence[int],
    log_bounds: Mapping[int, LogBoundsView],
    now_ms: int,
    report_dir: str | Path,
    gx_dir: str | Path,
    run_name: str,
    damage: Sequence[LakeDamage] = (),
    sweep: bool = False,
) -> QualityRunResult:
    """Check ``hours`` (starts of sealed event-time hours, ms since the epoch, UTC; may be empty:
    then only the stream-wide stall and retention checks run) of ``stream``, write the reports
    and return what was found. ``log_bounds`` maps each partition of the log to its bounds now;
    ``now_ms`` is the time the stall rules judge at. A Kinesis stream's bounds are
    connectors.kinesis_lookups.ShardLogBounds; its positions are sequence numbers, checked through its
    PositionType (never subtracted).

    ``lake`` answers the facts of the stream's tables: expectations.delta_lake_facts.DeltaLakeFacts
    without Spark, or expectations.lake_facts.SparkLakeFacts (the sweep's).

    ``damage``: commits of the lake's log that removed or rewrote rows of some of ``hours``
    (expectations.lake_damage); a hole or loss found in such an hour names the operation, and
    the hour's report lists it. ``sweep``: completeness and retention only (no gaps, uniqueness,
    volumes or stall), and no hour report is written: the hour's full report stays the memory.

    Raises QualityTablesMissingError when one of the stream's tables does not exist, ValueError
    for an hour that is not the start of an hour or a run name unfit for a folder name.
    """
    started = time.monotonic()
    if not _RUN_NAME.match(run_name):
        raise ValueError(
            f"run name {run_name!r}: use letters, digits and _ . : + - (at most 200, starting with a letter or digit)"
        )
    hours_ms = require_hour_starts([int(hour) for hour in hours])
    lake.require()
    log.info(
        {
            "event": "quality_run_started",
            "stream": stream.name,
            "run_name": run_name,
            "hours": [hour_text(h) for h in hours_ms],
        }
    )
    stages = _Stages()
    facts = _gather_facts(lake, stream, hours_ms, log_bounds, now_ms, sweep, stages)
    with stages.time("gx_start"):  # importing GX and opening its project: the same on every run
        project = GxProject(gx_dir)
    with stages.time("validation"):
        outcomes, checks = _validate(project, stream, facts, sweep, stages, run_name)
    found = name_the_damage(_findings(outcomes, facts, stream.quality, sweep), damage)
    with stages.time("reports"):
        result = _report(project, stream, facts, found, checks, log_bounds, now_ms, report_dir, run_name, damage, sweep)
    result = result.finished(time.monotonic() - started, stages.items())
    write_summary(result)
    log.info(
        {
            "event": "quality_run_finished",
            "stream": stream.name,
            "run_name": run_name,
            "success": result.success,
            "statuses": {str(p.partition): p.status.value for p in result.partitions},
            "recovery_requests": len(result.recovery_requests),
            "sweep": sweep,
            "damage": [d.sentence() for d in result.damage],
            "summary_html": result.summary_html,
            "seconds": round(result.seconds, 3),
            # Data files of events, late and quarantine the run read (the Spark-free reader
            # counts them): what the checked hours cost, whatever the lake's age.
            "files_read": getattr(lake, "files_read", None),
        }
    )
    return result


@dataclass(frozen=True)
class _RunFacts:
    """What one quality run found in the lake and the log, before any check judged it: the
    ledger, the hours' seals, the partitions and their live positions, and each check family's
    facts (empty for a family the run does not check)."""

    hours_ms: list[int]
    entries: list[LedgerEntry]
    seals: dict[int, int | None]
    partitions: list[int]
    positions: dict[int, int | None]
    earliest: dict[int, int]
    position_type: PositionType
    range_facts: list
    span_counts: dict
    uniqueness_facts: list
    hour_counts: dict
    gap_facts: list
    volume_facts: list
    retention_facts: list
    stall_facts: list
    decoding_facts: list


def _gather_facts(
    lake: LakeFacts,
    stream: StreamConfig,
    hours_ms: list[int],
    log_bounds: Mapping[int, LogBoundsView],
    now_ms: int,
    sweep: bool,
    stages: _Stages,
) -> _RunFacts:
    """Read the lake's facts for ``hours_ms``, each stage timed. A sweep gathers completeness and
    retention only."""
    settings = stream.quality
    position_type = stream.source.position_type
    with stages.time("ledger"):
        # A regular run converts only the ledger rows its hours need; a sweep checks them all.
        entries = lake.ledger() if sweep else lake.ledger_for_hours(hours_ms, settings.stall_rules().window)
        seals = lake.seals() if hours_ms and not sweep else {}
    partitions = sorted(set(log_bounds) | {entry.partition for entry in entries})
    positions = {partition: live_position(entries, partition) for partition in partitions}
    earliest = {partition: bounds.earliest for partition, bounds in log_bounds.items()}
    log_ends = {partition: bounds.end for partition, bounds in log_bounds.items()}
    scopes = hour_scopes(entries, hours_ms)

    range_facts, span_counts, uniqueness_facts = _offset_facts(
        lake, entries, scopes, partitions, position_type, sweep, stages
    )
    with stages.time("gaps"):
        hour_counts = lake.count_by_hour(hours_ms if sweep else with_history(hours_ms, settings.history_hours))
        gap_facts = (
            [] if sweep else gaps.facts(partitions, hours_ms, hour_counts, lake.longest_gaps(hours_ms), settings)
        )
    with stages.time("late_and_quarantine"):
        volume_facts = [
            LateAndQuarantineFacts(
                hour_ms,
                partition,
                hour_counts.get((partition, hour_ms), HourCounts(0, 0)).late,
                span_counts.get((hour_ms, partition), NO_COUNT).quarantined,
            )
            for hour_ms in hours_ms
            for partition in partitions
            if not sweep
        ]
    with stages.time("retention"):
        holes = completeness.candidate_holes(range_facts)
        accepted = accepted_losses(entries)
        retention_facts = (
            retention.facts(positions, earliest, holes, accepted)
            if position_type.dense
            else retention.kinesis_facts(positions, dict(log_bounds), holes, position_type, accepted)
        )
    with stages.time("stall"):
        stall_facts = stall.facts(
            entries,
            partitions,
            settings.stall_rules(),
            now_ms,
            log_ends,
            positions,
            position_type,
            dict(log_bounds),
            finished_partitions(entries),
        )
    with stages.time("decoding"):
        decoding_facts = decoding.facts(entries, partitions, settings.stall_rules().window)
    return _RunFacts(
        hours_ms,
        entries,
        seals,
        partitions,
        positions,
        earliest,
        position_type,
        range_facts,
        span_counts,
        uniqueness_facts,
        hour_counts,
        gap_facts,
        volume_facts,
        retention_facts,
        stall_facts,
        decoding_facts,
    )


def _offset_facts(
    lake: LakeFacts,
    entries: list[LedgerEntry],
    scopes: list[HourScope],
    partitions: list[int],
    position_type: PositionType,
    sweep: bool,
    stages: _Stages,
) -> tuple[list, dict, list]:
    """Completeness facts, the row counts per span, and uniqueness facts (none in a sweep), from
    one read of the persisted positions of the ranges in scope, released after."""
    scan_bounds = _scan_bounds(scopes)
    offsets = None
    try:
        with stages.time("completeness"):
            window = event_window(entries, scan_bounds)
            offsets = lake.persisted_offsets(scan_bounds, position_type, window) if scan_bounds else None
            range_facts = completeness.facts(entries, scopes, offsets, position_type) if offsets is not None else []
        with stages.time("uniqueness"):
            span_counts = (
                offsets.count_in_spans(_scope_spans(scopes, partitions)) if offsets is not None and not sweep else {}
            )
            uniqueness_facts = uniqueness.facts(partitions, scopes, span_counts) if not sweep else []
    finally:
        if offsets is not None:
            offsets.release()
    return range_facts, span_counts, uniqueness_facts


def _validate(
    project: GxProject, stream: StreamConfig, facts: _RunFacts, sweep: bool, stages: _Stages, run_name: str
) -> tuple[dict[str, FamilyOutcome], list[CheckSummary]]:
    """Each check family's GX validation of its facts (not run when it has none), logged one
    line each."""
    settings, position_type = stream.quality, facts.position_type
    plan = [
        (completeness.family(position_type), facts.range_facts),
        (retention.family(position_type), facts.retention_facts),
        (gaps.family(settings), facts.gap_facts),
        (uniqueness.family(), facts.uniqueness_facts),
        (late_and_quarantine.family(settings), facts.volume_facts),
        (stall.family(position_type), [] if sweep else facts.stall_facts),
        (decoding.family(settings), [] if sweep else facts.decoding_facts),
    ]
    outcomes: dict[str, FamilyOutcome] = {}
    checks = []
    for family, family_facts in plan:
        if family_facts:
            rows = [fact.row(row_id) for row_id, fact in enumerate(family_facts)]
            outcome = project.validate(stream.name, family, rows, run_name)
        else:
            outcome = not_run(family.name)
        outcomes[family.name] = outcome
        check = CheckSummary(
            family.name,
            bool(family_facts),
            outcome.success,
            outcome.rows,
            tuple(outcome.failed_rules),
            tuple(outcome.warned_rules),
            stages.seconds(family.name),
            outcome.seconds,
        )
        checks.append(check)
        log.info({"event": "quality_check", "stream": stream.name, "run_name": run_name, **check.to_json()})
    return outcomes, checks


def _findings(outcomes: dict[str, FamilyOutcome], facts: _RunFacts, settings, sweep: bool) -> list[Finding]:
    """What each family's outcome says of its facts, one finding per failed or warned row."""
    return [
        *completeness.findings(outcomes[completeness.NAME], facts.range_facts),
        *retention.findings(outcomes[retention.NAME], facts.retention_facts),
        *gaps.findings(outcomes[gaps.NAME], facts.gap_facts, settings),
        *uniqueness.findings(outcomes[uniqueness.NAME], facts.uniqueness_facts),
        *late_and_quarantine.findings(outcomes[late_and_quarantine.NAME], facts.volume_facts, settings),
        *stall.findings(outcomes[stall.NAME], [] if sweep else facts.stall_facts),
        *decoding.findings(outcomes[decoding.NAME], [] if sweep else facts.decoding_facts),
    ]


def _report(
    project: GxProject,
    stream: StreamConfig,
    facts: _RunFacts,
    found: list[Finding],
    checks: list[CheckSummary],
    log_bounds: Mapping[int, LogBoundsView],
    now_ms: int,
    report_dir: str | Path,
    run_name: str,
    damage: Sequence[LakeDamage],
    sweep: bool,
) -> QualityRunResult:
    """The run's result (each partition's verdict, the recovery requests, the figures per hour),
    its Data Docs built and, unless a sweep, each hour's report written."""
    hours_ms, partitions = facts.hours_ms, facts.partitions
    project.prune_results(stream.quality.data_docs_keep_ms)
    data_docs = project.build_data_docs()
    partition_results = _partition_verdicts(facts, found, log_bounds)
    requests = tuple(
        request
        for quality in partition_results
        if (
            request := recovery_request(
                stream.name, quality, [f for f in found if f.partition == quality.partition], facts.position_type
            )
        )
    )
    figures_per_hour = hour_figures(
        hours_ms,
        partitions,
        found,
        facts.range_facts,
        facts.hour_counts,
        facts.span_counts,
        facts.gap_facts,
        facts.earliest,
    )
    folder = summary_folder(report_dir, stream.name, run_name)
    hour_paths = {} if sweep else {hour_ms: hour_report_path(report_dir, stream.name, hour_ms) for hour_ms in hours_ms}
    ran = any(check.ran for check in checks)
    result = QualityRunResult(
        stream=stream.name,
        run_name=run_name,
        now_ms=now_ms,
        hours_ms=tuple(hours_ms),
        partitions=tuple(partition_results),
        hours=tuple(figures_per_hour),
        checks=tuple(checks),
        recovery_requests=requests,
        summary_json=str(folder / "summary.json"),
        summary_html=str(folder / "summary.html"),
        data_docs_index=str(data_docs) if ran and data_docs is not None else None,
        hour_reports=tuple(str(hour_paths[h]) for h in hours_ms if h in hour_paths),
        seconds=0.0,
        stage_seconds=(),
        damage=tuple(damage),
        sweep=sweep,
    )
    _write_hour_reports(result, facts, hour_paths)
    return result


def _partition_verdicts(
    facts: _RunFacts, found: list[Finding], log_bounds: Mapping[int, LogBoundsView]
) -> list[PartitionQuality]:
    """Each partition's verdict from its findings, its stall facts and its bounds."""
    stall_by_partition = {fact.partition: fact for fact in facts.stall_facts}
    return [
        partition_quality(
            partition,
            [f for f in found if f.partition == partition],
            stall_by_partition[partition],
            facts.positions.get(partition),
            log_bounds.get(partition),
            facts.entries,
            facts.hours_ms,
            facts.hour_counts,
            facts.span_counts.get((None, partition), NO_COUNT),
            facts.position_type,
        )
        for partition in facts.partitions
    ]


def _write_hour_reports(result: QualityRunResult, facts: _RunFacts, hour_paths: Mapping[int, Path]) -> None:
    """One report per checked hour (tidemark.quality_summary.HourReport), with the commits that
    made it be checked again."""
    for hour_ms, path in hour_paths.items():
        figures = [f for f in result.hours if f.hour_ms == hour_ms]
        write_hour_report(
            path,
            HourReport(
                stream=result.stream,
                hour=hour_text(hour_ms),
                hour_ms=hour_ms,
                run_name=result.run_name,
                checked_at_ms=result.now_ms,
                sealed_at_ms=facts.seals.get(hour_ms),
                success=all(not f.failed_checks for f in figures),
                partitions=tuple(figures),
                # Why the hour was checked again: the commits that removed or rewrote its rows.
                damage=tuple(d.summary() for d in result.damage_in(hour_ms)),
                summary_html=result.summary_html,
            ),
        )


def name_the_damage(found: list[Finding], damage: Sequence[LakeDamage]) -> list[Finding]:
    """A hole or loss in an hour that a commit removed or rewrote rows of says which commit."""
    if not damage:
        return found
    named = []
    for finding in found:
        causes = [d for d in damage if finding.hour_ms in d.hours_ms]
        if causes and finding.status in (QualityStatus.HOLE, QualityStatus.LOST):
            finding = replace(
                finding, reason=f"{finding.reason}; the lake's log shows " + "; ".join(d.sentence() for d in causes)
            )
        named.append(finding)
    return named


def _scan_bounds(scopes: list[HourScope]) -> dict[int, OffsetRange]:
    """Per partition, one span covering every range of the checked hours."""
    bounds: dict[int, OffsetRange] = {}
    for scope in scopes:
        for partition, entries in scope.ranges.items():
            for entry in entries:
                known = bounds.get(partition)
                bounds[partition] = OffsetRange(
                    min(entry.start, known.start) if known else entry.start,
                    max(entry.end, known.end) if known else entry.end,
                )
    return bounds


def _scope_spans(scopes: list[HourScope], partitions: list[int]) -> dict:
    """(hour, partition) → the hour's spans; (None, partition) → the spans of all checked hours."""
    spans = {}
    for partition in partitions:
        every_hour = []
        for scope in scopes:
            hour_spans = scope.spans(partition)
            if hour_spans:
                spans[(scope.hour_ms, partition)] = (partition, hour_spans)
                every_hour.extend(hour_spans)
        if every_hour:
            spans[(None, partition)] = (partition, merge_ranges(every_hour))
    return spans


class _Stages:
    """Wall time per stage of the run, in seconds."""

    def __init__(self):
        self._seconds: dict[str, float] = {}

    @contextmanager
    def time(self, stage: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self._seconds[stage] = self._seconds.get(stage, 0.0) + time.monotonic() - started

    def seconds(self, stage: str) -> float:
        return self._seconds.get(stage, 0.0)

    def items(self) -> tuple[tuple[str, float], ...]:
        return tuple(self._seconds.items())


# --- command line ------------------------------------------------------------------------------


def read_log_bounds(stream: StreamConfig, ledger: list[LedgerEntry] | None = None) -> dict:
    """Every partition of the stream's log → its bounds, asked of the log now
    (connectors.log_bounds). A Kinesis shard is probed at the lake's live position: ``ledger``
    (the ledger's entries) says where that is and which shards are FINISHED."""
    from connectors.log_bounds import read_log_bounds as ask_the_log

    if ledger is None:
        return ask_the_log(stream)
    partitions = {entry.partition for entry in ledger}
    positions = {p: position for p in partitions if (position := live_position(ledger, p)) is not None}
    return ask_the_log(stream, positions, finished_partitions(ledger))


def parse_hours(text: str) -> list[int]:
    """'2026-11-22T01:00:00Z,2026-11-22T02:00:00Z' → hour starts in ms; ValueError naming the bad one."""
    hours = []
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        hours.append(parse_event_time(part))
    if not hours:
        raise ValueError("no hour given; write e.g. 2026-11-22T01:00:00Z,2026-11-22T02:00:00Z")
    return require_hour_starts(hours)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quality_run",
        description="Quality checks of one stream: per sealed hour and partition, plus stall and retention; "
        "writes Data Docs, summary.json and summary.html, and lists the recovery requests.",
    )
    parser.add_argument("--stream", required=True, help="the stream's name in the configuration")
    parser.add_argument("--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"))
    parser.add_argument(
        "--hours",
        help="hours to check, comma-separated ISO-8601 UTC starts; default: every sealed hour without a report yet",
    )
    parser.add_argument(
        "--reconcile",
        action="store_true",
        help="with --hours: also every sealed hour without a report yet (without --hours this is what happens anyway)",
    )
    parser.add_argument("--report-dir", required=True, type=Path)
    parser.add_argument("--gx-dir", required=True, type=Path)
    parser.add_argument("--run-name", required=True)
    parser.add_argument("--result", type=Path, help="also write the result JSON to this file")
    parser.add_argument("--now-ms", type=int, help="judge the stall rules at this time (ms since the epoch, UTC)")
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="the slow sweep: completeness of every sealed hour the "
        "source log still retains, no other check, no hour report",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    asked = _asked(argv)
    if isinstance(asked, int):
        return asked
    args, stream, sweep = asked.args, asked.stream, asked.args.sweep
    from connectors.kafka_clients import KafkaRefusedError
    from connectors.quality_look import table_versions

    try:
        now_ms = args.now_ms if args.now_ms is not None else int(time.time() * 1000)
        spark, lake, hours, found = _lake_and_hours(stream, args, asked.hours, now_ms)
        files_missing = any(d.kind is DamageKind.FILES_MISSING for d in found.damage)
        if files_missing and spark is None:
            lake = DeltaLakeFacts(stream, skip_missing_files=True)
        try:
            if stream.source.position_type.dense:
                log_bounds = read_log_bounds(stream)
            else:  # Kinesis answers only at a position: the lake's
                log_bounds = read_log_bounds(stream, lake.ledger_for_hours([], stream.quality.stall_rules().window))
        except ValueError as error:  # the configured topic or stream does not exist
            return _refuse(f"stream {stream.name!r}: {error}")
        except KafkaRefusedError as error:  # credentials, certificate or protocol: retrying cannot help
            return _refuse(f"stream {stream.name!r}: {error}")
        versions = None if sweep else _versions_or_none(stream, table_versions)  # before it reads them
        with _reading_around_missing_files(spark, files_missing):
            result = run_quality(
                lake,
                stream,
                hours,
                log_bounds,
                now_ms,
                args.report_dir,
                args.gx_dir,
                args.run_name,
                damage=found.damage,
                sweep=sweep,
            )
        remember_checked(args.report_dir, stream.name, found, args.run_name, now_ms)
        if versions is not None:
            remember_check(args.report_dir, stream.name, last_check_of(result.summary(), versions, now_ms))
    except QualityTablesMissingError as error:
        return _refuse(str(error))
    except Exception as error:  # noqa: BLE001 - the exit status is the contract with Airflow
        log.exception({"event": "quality_run_failed", "stream": stream.name, "error": str(error)})
        print(f"quality_run: stream {stream.name!r}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    if args.result:
        # The operator reads it back with the same type (tidemark.quality_summary).
        write_quality_summary(args.result, result.summary())
    print(_one_screen(result))
    return 0


@dataclass(frozen=True)
class _Asked:
    """The command line, checked: its arguments, the hours it names (None: none named) and the stream."""

    args: argparse.Namespace
    hours: list[int] | None
    stream: StreamConfig


def _asked(argv: list[str] | None) -> _Asked | int:
    """The checked command line, or the exit status of its refusal (the reason printed)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse has printed what was wrong
        return 0 if exit_.code in (0, None) else 2
    try:
        hours = parse_hours(args.hours) if args.hours is not None else None
    except ValueError as error:
        return _refuse(f"--hours: {error}")
    if not _RUN_NAME.match(args.run_name):
        return _refuse(f"--run-name {args.run_name!r}: use letters, digits and _ . : + -")
    try:
        stream = load_stream(args.conf, args.stream)
    except StreamConfigError as error:
        return _refuse(str(error))
    if args.sweep and (hours is not None or args.reconcile):
        return _refuse(
            "--sweep checks every sealed hour the source log still retains: give it without --hours and --reconcile"
        )
    return _Asked(args, hours, stream)


def _lake_and_hours(stream: StreamConfig, args: argparse.Namespace, hours: list[int] | None, now_ms: int):
    """(Spark session or None, the lake's facts, the hours to check, the damage found). A sweep
    reads every hour the log retains with Spark (a scan of the large tables); otherwise the
    named hours, and with none named or ``--reconcile`` every sealed hour not yet checked and
    every hour a commit damaged, read without Spark."""
    if args.sweep:
        from connectors.spark_session import lake_spark_session

        spark = lake_spark_session(f"tidemark-quality-{stream.name}")
        lake = SparkLakeFacts(spark, stream)
        lake.require()
        hours = sweep_hours(lake.seals(), now_ms, stream.retention_ms)
        found = DamageFound(sweep_damage(lake, stream, hours))
        log.info({"event": "quality_sweep", "stream": stream.name, "hours": len(hours)})
        return spark, lake, hours, found
    lake = DeltaLakeFacts(stream)
    lake.require()
    found = DamageFound(())
    if hours is None or args.reconcile:
        sealed = lake.seals()
        unchecked = unchecked_sealed_hours(sealed, args.report_dir, stream.name)
        found = find_damage(lake, stream, args.report_dir, sealed)
        damaged = hours_of(found.damage)
        log.info(
            {
                "event": "quality_hours_reconciled",
                "stream": stream.name,
                "hours": [hour_text(h) for h in unchecked],
                "damaged_hours": [hour_text(h) for h in damaged],
                "log_commits_read": found.commits_read,
            }
        )
        hours = sorted(set(hours or []) | set(unchecked) | set(damaged))
    return None, lake, hours, found


@contextmanager
def _reading_around_missing_files(spark, missing: bool):  # spark None: no session, nothing to set
    """Files the tables reference are gone: read what is left for the run, so the checks report
    their rows as missing instead of the run failing on the first absent file."""
    key = "spark.sql.files.ignoreMissingFiles"
    if spark is None or not missing:  # the Spark-free reader skips them itself
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, "true")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _versions_or_none(stream: StreamConfig, table_versions) -> dict[str, int] | None:
    """The watched tables' versions (tidemark.quality_look), or None when they cannot be read: the
    check runs all the same, and leaves no memory (its stream is then checked at every tick)."""
    try:
        return table_versions(stream)
    except Exception as error:  # noqa: BLE001 - the memory is an optimisation, never a reason to fail
        log.warning({"event": "quality_versions_unread", "stream": stream.name, "error": str(error)})
        return None


def _refuse(message: str) -> int:
    print(f"quality_run: {message}", file=sys.stderr)
    return 2


def _one_screen(result: QualityRunResult) -> str:
    lines = [
        f"stream {result.stream}, run {result.run_name}: "
        + (
            "all checks passed"
            if result.success
            else "checks failed: " + ", ".join(c.name for c in result.checks if c.ran and not c.success)
        )
        + (
            f"; sweep of {len(result.hours_ms)} hours (completeness only)"
            if result.sweep
            else f"; hours: {', '.join(hour_text(h) for h in result.hours_ms) or 'none'}"
        )
    ]
    for d in result.damage:
        lines.append(
            f"  lake damage: {d.sentence()}; hours checked again: {', '.join(hour_text(h) for h in d.hours_ms)}"
        )
    for p in result.partitions:
        lines.append(f"  partition {p.partition}: {p.status.value} - {p.reason}")
    lines.append(f"summary: {result.summary_html}")
    return "\n".join(lines)


def configure_logging() -> None:
    """The run's logging as spark-submit runs it: one JSON object per line on stderr, as the
    Spark jobs write theirs (py4j's connection chatter at INFO held back)."""
    configure_json_logging(logging.INFO)


if __name__ == "__main__":
    configure_logging()
    sys.exit(main())
