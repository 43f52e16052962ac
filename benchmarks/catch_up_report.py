"""The catch-up benchmark's results as markdown: one table of runs and one of ratios and targets
per scenario, the command, the machine. Pure: it renders the report dict the driver writes as
JSON (benchmarks/catch_up_side_by_side.py) and reads nothing else.
"""

from __future__ import annotations

RUN_LABELS = {
    "a": "(a) tidemark, aligned",
    "b": "(b) Spark Kafka source → Delta",
    "c": "(c) read ceiling: confluent-kafka → Arrow",
    "d": "(d) write ceiling: memory → Delta",
    "a sparse": "(a) sparse: 7 days of event time",
    "a dense": "(a) dense: 1 hour of event time",
    "a 1x": "(a) 1× backlog",
    "a 4x": "(a) 4× backlog (uniform's)",
    "b 4x": "(b) 4× backlog (uniform's)",
    "a continuous": "(a) tidemark, continuous",
    "a 4p": "(a) tidemark, 4 partitions",
    "a 64p": "(a) tidemark, 64 partitions",
    "a 256p": "(a) tidemark, 256 partitions",
    "b 256p": "(b) Spark Kafka source → Delta, 256 partitions",
}

_RUNS_HEADER = "| run | records | batches | seconds | records/s | peak RSS MB | notes |\n|---|---|---|---|---|---|---|"


def render_markdown(report: dict) -> str:
    machine = report["machine"]
    options = report["options"]
    lines = [
        "# Catch-up side by side",
        "",
        f"Command: `{report['command']}`  ",
        f"Machine: {machine['cores']} cores, Python {machine['python']} ({machine.get('platform', '')}); "
        f"measured at {report['measured_at']} (UTC)  ",
        f"Topics of {options.get('partitions', 4)} partitions. "
        f"Row budget: {options['max_records_per_batch']:,} records per batch, every run. "
        f"Driver heap (TIDEMARK_DRIVER_MEMORY): {options.get('driver_memory', 'not recorded')}.",
        "",
        "(a) and (b): wall time of the whole process, JVM start included; (c) and (d): their timed part "
        "only (no process or JVM start), so min(c, d) is the most either could do here. "
        "A ratio is written only when all of its runs succeeded.",
    ]
    for name, scenario in report["scenarios"].items():
        lines += ["", f"## {name}{_backlog_title(scenario)}", ""]
        if "failed" in scenario:
            lines += [f"**FAILED**: {_one_line(scenario['failed'])}", ""]
        if "runs" in scenario:
            lines += _runs_table(name, scenario)
            lines += _profile_lines(scenario["runs"])
        if "planning" in scenario:
            lines += ["", *_planning_lines(scenario["planning"])]
        figures = {**scenario.get("ratios", {}), **scenario.get("targets", {})}
        if figures:
            lines += ["", "| figure | value | target | result |", "|---|---|---|---|"]
            lines += [_figure_row(label, figure) for label, figure in figures.items()]
        lines.append(f"\nScenario time: {scenario.get('scenario_seconds', '?')} s")
    if report["failed"]:
        lines += ["", "## Failures", ""] + [f"- {_one_line(failure)}" for failure in report["failed"]]
    return "\n".join(lines) + "\n"


def _profile_lines(runs: dict) -> list[str]:
    """Where each tidemark run's time went (its ``profile``, from the job's own log)."""
    lines = []
    for name, run in runs.items():
        profile = (run or {}).get("profile")
        if not profile:
            continue
        query = profile["query_seconds"]
        by_phase = ", ".join(f"{phase} {seconds} s" for phase, seconds in profile["batch_seconds_by_phase"].items())
        per_batch = " · ".join(
            f"{b['seconds']}" + (f" (tables {b['tables_wait']})" if b.get("tables_wait") else "")
            for b in profile["batches"]
        )
        lines += [
            "",
            f"Where {RUN_LABELS.get(name, name)} spent its {profile['process_wall_seconds']} s: "
            f"{profile['outside_query_seconds']} s outside its query (the process's, JVM's and session's start, "
            f"the topic's check, the exit), then planning {query['planning']} s, batches {query['writing']} s "
            f"({by_phase}), checkpoint {query['checkpoint']} s. "
            f"Seconds per batch: {per_batch}.",
        ]
    return lines


def _backlog_title(scenario: dict) -> str:
    backlog = scenario.get("backlog")
    if backlog:
        return f": {backlog['records']:,} records, {backlog['hours']:g} h of {','.join(backlog['profiles'])}"
    backlogs = scenario.get("backlogs")
    if backlogs:
        return ": " + "; ".join(
            f"{name} {b['records']:,} records over {b['hours']:g} h" for name, b in backlogs.items()
        )
    if "producer" in scenario:
        producer = scenario["producer"]
        return f": live producer, {','.join(producer['profiles'])}, {producer['minutes']:g} min"
    return ""


def _runs_table(scenario_name: str, scenario: dict) -> list[str]:
    if scenario_name == "continuous":
        header = (
            "| run | produced | visible | not visible | p50 s | p99 s | max s | peak RSS MB | stopped in s (exit) |\n"
            "|---|---|---|---|---|---|---|---|---|"
        )
        rows = []
        for name, run in scenario["runs"].items():
            if "failed" in run:
                rows.append(f"| {RUN_LABELS.get(name, name)} | FAILED: {_one_line(run['failed'])} |||||||| ")
                continue
            rows.append(
                f"| {RUN_LABELS.get(name, name)} | {run['produced']:,} | {run['visible']:,} | {run['not_visible']:,} "
                f"| {run['p50_seconds']} | {run['p99_seconds']} | {run['max_seconds']} | {run['peak_rss_megabytes']:,} "
                f"| {run['stopped_in_seconds']} ({run['exit_code_after_sigterm']}) |"
            )
        return [header, *rows]
    rows = [_run_row(name, run, scenario_name) for name, run in scenario["runs"].items()]
    return [_RUNS_HEADER, *rows]


def _run_row(name: str, run: dict | None, scenario_name: str) -> str:
    label = RUN_LABELS.get(name, name)
    if run is None or "failed" in run:
        return f"| {label} | FAILED: {_one_line((run or {}).get('failed', 'did not run'))} ||||||"
    if name == "c":
        seconds, per_second = run["read_seconds"], run["records_per_second"]
        notes = [f"process {run['process_wall_seconds']} s", f"{run['value_bytes'] / 1e6:,.1f} MB of values"]
        batches = "–"
    elif name == "d":
        seconds, per_second = run["write_seconds"], run["records_per_second"]
        notes = [
            f"{run['chunks']} chunks",
            f"JVM/session {run['session_seconds']} s",
            f"decode {run['decode_seconds']} s",
            f"process {run['process_wall_seconds']} s",
        ]
        batches = f"{run['chunks']} chunks"
    else:
        seconds, per_second = run["wall_seconds"], run["records_per_second"]
        batches = "?" if run.get("batches") is None else f"{run['batches']:,}"
        notes = []
        if "aligned_slices" in run:
            notes.append(f"{run['aligned_slices']:,} aligned slices")
        if "kept" in run:
            per_second = run["kept_records_per_second"]
            notes.append(f"records/s over the {run['kept']:,} records kept")
        if "late" in run:
            notes.append(
                f"late (kept in the late table) {run['late']:,}{_per_partition(run.get('late_per_partition'))}"
            )
        if "dropped" in run:
            notes.append(
                f"dropped by Spark's watermark {run['dropped']:,}{_per_partition(run['dropped_per_partition'])}, "
                f"replay {'agrees' if run['replay_agrees'] else 'DISAGREES'} with (b)'s own maxima"
            )
        if run.get("quarantined"):
            notes.append(f"quarantined {run['quarantined']:,}")
    if run.get("unread"):
        notes.append(f"**{run['unread']:,} produced records not read**")
    if run.get("peak_pss_megabytes"):
        by_process = ", ".join(f"{kind} {mb:,}" for kind, mb in run.get("rss_megabytes_at_peak_by_process", {}).items())
        notes.append(f"peak PSS {run['peak_pss_megabytes']:,} MB; RSS at peak by process: {by_process}")
    return (
        f"| {label} | {run['records']:,} | {batches} | {seconds} | {per_second:,} | {run['peak_rss_megabytes']:,} "
        f"| {'; '.join(notes)} |"
    )


def _planning_lines(planning: dict) -> list[str]:
    """The planner alone (benchmarks/partition_scaling.py): its start and its first batches."""
    if "failed" in planning:
        return [f"Planning: **FAILED**: {_one_line(planning['failed'])}"]
    lines = [
        f"Planning alone, {planning['partitions']:,} partitions, {planning['records']:,} records over 1 h "
        f"(topic created in {planning['create_topic_seconds']} s): start {planning['initial_seconds']} s; "
        f"first batch's read tasks hold {planning['first_batch_partitions_per_read_task']} partitions.",
        "",
        "| batch | plan seconds | aligned steps | read tasks | tasks seconds |",
        "|---|---|---|---|---|",
    ]
    for number, batch in enumerate(planning["batches"], 1):
        lines.append(
            f"| {number} | {batch['seconds']} | {batch['steps']} | {batch['read_tasks']} | {batch['tasks_seconds']} |"
        )
    return lines


def _per_partition(counts: dict | None) -> str:
    if not counts:
        return ""
    return " (" + ", ".join(f"p{p} {n:,}" for p, n in counts.items()) + ")"


def _figure_row(label: str, figure: dict) -> str:
    if "no_ratio" in figure:
        return f"| {label} | no ratio: {figure['no_ratio']} | {_limit(figure)} | – |"
    if "no_figure" in figure:
        return f"| {label} | no figure: {figure['no_figure']} | {_limit(figure)} | – |"
    return f"| {label} | {figure['value']} | {_limit(figure)} | {figure.get('result', '–')} |"


def _limit(figure: dict) -> str:
    if "limit" in figure:
        return f"≤ {figure['limit']:g}"
    return f"≥ {figure['at_least']:g}" if "at_least" in figure else "–"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400].replace("|", "\\|")
