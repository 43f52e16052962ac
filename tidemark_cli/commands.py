"""The ``tidemark`` commands: wiring only, each command's work lives in its own module.

Exit codes: 0 done; 1 a failure, with "error: ..." on stderr saying what was wrong and what to
do (a DAG run that failed adds its failed tasks, the exception each failed with and where its
log is); 2 a usage error (an unknown stream, a bad param: nothing was started); 3 `tidemark
services` found a service not running; 130 interrupted.

The embedded stack's commands (up, down, services, env, jars, create-topic, create-kinesis-stream,
demo) are here too, and config-reference, which writes the docs' configuration reference:
the stack itself (stack/) has no command line of its own.
"""

from __future__ import annotations

import os
import shlex
import time
from datetime import UTC, datetime

import click
from rich.console import Console
from rich.markup import escape

from connectors.jars import JarsError
from stack.environment import REPO_ROOT, embedded_environment, tidemark_home
from stack.errors import StackError
from stack.services import DEFAULT_SERVICES, SERVICES
from tidemark.stream_config import StreamConfig, StreamConfigError
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.stream_argument import configuration_path, stream_argument

EXIT_FAILED = 1
EXIT_SERVICE_DOWN = 3  # `tidemark services`: a service does not run
STACK_ENVIRONMENT = "stack_environment"  # context.obj key: what main() added to the environment

_console = Console(highlight=False)
_errors = Console(stderr=True, highlight=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--conf",
    default=lambda: os.environ["TIDEMARK_CONF"],
    show_default="$TIDEMARK_CONF or conf/streams.yaml",
    type=click.Path(dir_okay=False),
    help="The stream configuration to read.",
)
def cli(conf: str) -> None:
    """tidemark: persist Kafka topic partitions into Delta tables with honest event time.

    Runs against the embedded stack (Kafka and Airflow on 127.0.0.1, state in .tidemark/):
    start it with `tidemark up`, or everything at once with `tidemark demo`.
    """


@cli.command(short_help="Start the embedded stack (make up).")
@click.argument("services", nargs=-1, type=click.Choice(SERVICES))
def up(services: tuple[str, ...]) -> int:
    """Start the embedded stack: Kafka, the loopback S3 and Kinesis, the alarm inbox, then Airflow (or only SERVICES).
    The schema registry starts only when named (`tidemark up registry`).

    The same as `make up`. Fetches the pinned JVM jars first (Maven, once).

    \b
    Example:
      tidemark up
      tidemark up registry
    """
    from connectors.jars import DEFAULT_GROUPS, GROUPS, ensure_jars, jars_root
    from stack.services import start_services

    downloaded = ensure_jars(jars_root(), GROUPS if "registry" in services else DEFAULT_GROUPS)
    if downloaded:
        _console.print(f"Downloaded jar groups {', '.join(downloaded)} into {jars_root()}.")
    for message in start_services(services):
        _console.print(escape(message), soft_wrap=True)
    return 0


@cli.command(short_help="Stop the embedded stack (make down).")
@click.argument("services", nargs=-1, type=click.Choice(SERVICES))
def down(services: tuple[str, ...]) -> int:
    """Stop the embedded stack: Airflow, the alarm inbox, the schema registry, the loopback Kinesis and S3, then Kafka (or only SERVICES).
    Keeps all state but the loopback Kinesis's streams, which live in its memory.

    The same as `make down`.

    \b
    Example:
      tidemark down
    """
    from stack.services import stop_services

    for message in stop_services(services):
        _console.print(escape(message), soft_wrap=True)
    return 0


@cli.command(short_help="Run the demo end to end (make demo).")
@click.option(
    "--hours", type=click.IntRange(min=1), default=3, show_default=True, help="Simulated hours of backlog to produce."
)
@click.option(
    "--stream",
    "stream_name",
    default="telemetry",
    show_default=True,
    help="The configured stream to run it on: telemetry (Kafka) or rides (Kinesis, on the loopback Kinesis).",
)
@click.option(
    "--incident",
    is_flag=True,
    help="On the running demo stack: freeze one partition, watch the checks find it, the alarms arrive "
    "and recovery put it right (Kafka streams).",
)
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="With --incident: the partition to freeze.",
)
def demo(hours: int, stream_name: str, incident: bool, partition: int) -> int:
    """Start everything, produce a backlog, run the persist, quality and backfill DAGs, report.

    The same as `make demo`. Run it again and it adds another backlog. With --incident, on the
    stack a demo left running: a partition stalls while the others go on, the quality DAG reports
    it STALL then STOP, the alarms reach the alarm inbox, the recover DAG replays the unread range,
    live is restarted and the next quality run is OK (`make incident`).

    \b
    Example:
      tidemark demo --hours 2
      tidemark demo --stream rides     # the same on the Kinesis stream
      tidemark demo --incident         # then: partition 2 stalls and is put right
    """
    if incident:
        from tidemark_cli.incident import run_incident

        return run_incident(stream_name, partition)
    from tidemark_cli.demo import run_demo

    return run_demo(hours=hours, stream_name=stream_name)


@cli.command("services", short_help="Show whether the embedded stack's services run.")
@click.argument("services", nargs=-1, type=click.Choice(SERVICES))
def services_status(services: tuple[str, ...]) -> int:
    """Whether Kafka, the loopback S3 and Kinesis, and Airflow (or only SERVICES, the schema registry among them) run and answer, one line each.

    Exit code 3 when one of them does not run. (`tidemark status STREAM` is a stream's partitions.)

    \b
    Example:
      tidemark services
    """
    from stack.services import service

    all_running = True
    for name in services or DEFAULT_SERVICES:
        handle = service(name)
        _console.print(escape(handle.status()), soft_wrap=True)
        all_running = all_running and handle.is_running()
    return 0 if all_running else EXIT_SERVICE_DOWN


@cli.command(short_help="Print the stack's settings as shell export lines.")
@click.pass_context
def env(context: click.Context) -> int:
    """Print `export NAME=value` lines for the settings the embedded stack needs that this shell
    lacks (PATH always, with the venv first): a shell that evaluates them runs spark-submit,
    airflow and the tests as the stack does. A variable already exported keeps its value.

    \b
    Example:
      tidemark env
      eval "$(tidemark env)"
    """
    for name, value in sorted(context.obj[STACK_ENVIRONMENT].items()):
        click.echo(f"export {name}={shlex.quote(value)}")
    return 0


@cli.command(short_help="Download the pinned JVM jars (Maven), once.")
def jars() -> int:
    """Download the pinned JVM jars the jobs and the stack need (Delta, Kafka, s3proxy, ...) into
    $TIDEMARK_JARS, with Maven; nothing when they are there. `tidemark up` does it too.

    \b
    Example:
      tidemark jars
    """
    from connectors.jars import GROUPS, ensure_jars, jars_root

    root = jars_root()
    downloaded = ensure_jars(root, GROUPS)
    if downloaded:
        _console.print(f"Downloaded jar groups {', '.join(downloaded)} into {root}.", soft_wrap=True)
    else:
        _console.print(f"Jars are up to date in {root}.", soft_wrap=True)
    return 0


@cli.command("create-topic", short_help="Create a Kafka topic on the embedded broker (idempotent).")
@click.argument("name")
@click.option("--partitions", type=click.IntRange(min=1), required=True, help="How many partitions the topic has.")
def create_topic(name: str, partitions: int) -> int:
    """Create topic NAME with PARTITIONS partitions on the broker at $TIDEMARK_KAFKA_BOOTSTRAP;
    a topic that exists is left as it is (and said so).

    \b
    Example:
      tidemark create-topic telemetry --partitions 4
    """
    from stack.kafka_broker import create_topic as create

    _console.print(escape(create(os.environ["TIDEMARK_KAFKA_BOOTSTRAP"], name, partitions)), soft_wrap=True)
    return 0


@cli.command("create-kinesis-stream", short_help="Create a stream on the loopback Kinesis (idempotent).")
@click.argument("name")
@click.option("--shards", type=click.IntRange(min=1), required=True, help="How many shards the stream has.")
def create_kinesis_stream(name: str, shards: int) -> int:
    """Create Kinesis stream NAME with SHARDS shards on the loopback Kinesis at $TIDEMARK_KINESIS_PORT
    and wait until it is active; a stream that exists with as many shards is left as it is (and
    said so). The loopback keeps its streams in memory: create them again after `tidemark down`.

    \b
    Example:
      tidemark create-kinesis-stream scooter-telemetry --shards 8
    """
    from stack.loopback_kinesis import LoopbackKinesis

    _console.print(escape(LoopbackKinesis.from_environment().create_stream(name, shards)), soft_wrap=True)
    return 0


@cli.command("refresh-topics", short_help="List a family's Kafka topics again: new topics become streams.")
@click.argument("families", nargs=-1)
@click.pass_context
def refresh_topics(context: click.Context, families: tuple[str, ...]) -> int:
    """Ask the brokers of each named family (every family, without a name) which topics they hold
    and write the family's listing: a new matching topic is a stream from the next DAG parse on,
    a deleted one stays, its runs failing, until it is excluded. The DAG
    tidemark_topics__<family> does the same on the family's `refresh` schedule.

    \b
    Example:
      tidemark refresh-topics orders
    """
    from connectors.kafka_clients import KafkaUnavailableError
    from connectors.topic_refresh import refresh_family
    from tidemark.kafka_access import KafkaAccessError
    from tidemark.stream_config import read_streams_file

    conf = configuration_path(context)
    declared = read_streams_file(conf)
    if not declared.families:
        raise CommandFailed(f"{conf} declares no family (a `families:` section)")
    unknown = [name for name in families if name not in declared.families]
    if unknown:
        raise click.BadParameter(
            f"unknown family {', '.join(map(repr, unknown))}; declared: {', '.join(sorted(declared.families))}",
            context,
            param_hint="'FAMILIES'",
        )
    failed = 0
    for name in families or sorted(declared.families):
        try:
            _console.print(escape(refresh_family(conf, name).summary()), soft_wrap=True)
        except (KafkaUnavailableError, KafkaAccessError) as error:
            _errors.print(f"[bold red]family {escape(name)}:[/] {escape(str(error))}", soft_wrap=True)
            failed += 1
    return EXIT_FAILED if failed else 0


@cli.command("config-reference", short_help="Print the configuration reference generated from the contract.")
@click.option("--write", is_flag=True, help="Write it to docs/reference/configuration.md instead of printing it.")
def config_reference(write: bool) -> int:
    """Print the reference of every key conf/streams.yaml may hold (type, default, meaning), made
    from the configuration's typed contract (tidemark/stream_config.py) and its comments; with
    --write, write it to docs/reference/configuration.md, the page the docs site shows.

    \b
    Example:
      tidemark config-reference --write
    """
    from tidemark_cli import config_reference as reference

    if write:
        _console.print(f"Wrote {reference.write(REPO_ROOT)}.", soft_wrap=True)
    else:
        click.echo(reference.render(), nl=False)
    return 0


@cli.command(short_help="Show each partition of a stream, or every stream in a line, worst first.")
@click.argument("stream", required=False, metavar="[STREAM]")
@click.option(
    "--filter", "text", default="", help="Without STREAM: only streams whose name, family or status has this."
)
@click.pass_context
def status(context: click.Context, stream: str | None, text: str) -> int:
    """Each partition of STREAM: read position, log end, lag, partition watermark, status (a
    stall status STOP, STALL, LAGGING or WARN before ACTIVE or IDLE, in colour), when its oldest
    unread record leaves the log, late and quarantined records; under G and the last sealed hour.
    Read from the lake's Delta tables and the log, without Spark: the watermark page's figures.

    Without STREAM, when several streams are configured (a family's members among them): every
    stream in one line, worst first: its worst partition's quality status and lag as its last
    quality check found them, and when that was.

    \b
    Example:
      tidemark status telemetry
      tidemark status --filter shops
    """
    from tidemark.stream_config import load_streams
    from tidemark_cli.stream_status import print_glances, print_status, read_overview

    conf = configuration_path(context)
    streams = load_streams(conf)
    if stream is None and len(streams) == 1:
        stream = next(iter(streams))
    if stream is None:
        from tidemark.stream_glance import stream_glances

        glances = stream_glances({name: s.family for name, s in streams.items()}, tidemark_home() / "reports", text)
        print_glances(_console, glances, len(streams))
        return 0
    if stream not in streams:
        raise click.BadParameter(
            f"unknown stream {stream!r}; the known streams are: {', '.join(sorted(streams))} (configured in {conf})",
            context,
            param_hint="'STREAM'",
        )
    print_status(_console, read_overview(streams[stream]))
    return 0


@cli.command(short_help="Backfill an event-time range through the backfill DAG.")
@stream_argument
@click.option("--start", help="Event time, inclusive, ISO-8601 with an offset: 2026-11-21T00:00:00Z.")
@click.option("--end", help="Event time, exclusive, ISO-8601 with an offset; not in the future.")
@click.option("--partitions", help='The partitions to read, e.g. "0,2". Default: all.')
@click.option(
    "--target",
    type=click.Choice(["shadow", "events"]),
    default="shadow",
    show_default=True,
    help="shadow: a table set of its own, compared with live; events: the stream's tables, insert-only.",
)
@click.option("--shadow-name", help="Name of the shadow table set. Default: made from the run's id.")
@click.option(
    "--compare/--no-compare",
    default=True,
    show_default=True,
    help="Shadow only: compare with live, recover what live lacks.",
)
@click.option(
    "--unpause",
    is_flag=True,
    help="Unpause the backfill DAG if it is paused. It then also runs its daily reconciliation, the latest one at once.",
)
@click.option(
    "--wait/--no-wait", default=True, show_default=True, help="Follow the run until it ends, with a progress bar."
)
def backfill(
    stream: StreamConfig, start, end, partitions, target: str, shadow_name, compare: bool, unpause: bool, wait: bool
) -> int:
    """Backfill an event-time range of STREAM from the log, through its backfill DAG.

    The params are checked as the DAG checks them, before anything starts. The run is followed
    with the offsets read of its planned ranges; the exit code is 1 when it fails.

    \b
    Example:
      tidemark backfill telemetry --start 2026-11-21T00:00:00Z --end 2026-11-22T00:00:00Z
    """
    from tidemark_cli.airflow_connection import connect_to_airflow, ready_dag
    from tidemark_cli.backfill_run import backfill_dag_id, backfill_params, print_backfill_result

    run_id = _new_run_id()
    request, conf = backfill_params(
        stream, start, end, partitions, target, shadow_name, compare, int(time.time() * 1000), run_id
    )
    dag_id = backfill_dag_id(stream)
    connection = connect_to_airflow()
    ready_dag(connection, dag_id, unpause)
    connection.api.trigger(dag_id, conf, run_id=run_id)
    partitions_text = ",".join(str(p) for p in request.partitions)
    _console.print(
        f"Triggered {dag_id}: [{conf['start']}, {conf['end']}) of partitions {partitions_text} into {request.target}\n"
        f"Run {escape(run_id)}: {connection.run_url(dag_id, run_id)}",
        soft_wrap=True,
    )
    if not wait:
        return 0
    # A family's backfill DAG maps its backfill task over the members it backfills: this one only.
    result_index = 0 if stream.family is not None else -1
    return _follow(connection, dag_id, run_id, "backfill", "backfill", print_backfill_result, result_index)


@cli.command(short_help="Replay offset ranges of a partition through the recover DAG.")
@stream_argument
@click.option("--partition", help="The partition to recover.")
@click.option("--ranges", help='Offset ranges to replay, end exclusive: "100-200,300-350".')
@click.option("--reason", help="Why (kept in the ledger's log and the report).")
@click.option(
    "--restart-live",
    is_flag=True,
    help="Start a persist run after the replay: the live job had stopped reading the partition.",
)
@click.option("--unpause", is_flag=True, help="Unpause the recover DAG if it is paused.")
@click.option(
    "--wait/--no-wait", default=True, show_default=True, help="Follow the run until it ends, with a progress bar."
)
def recover(stream: StreamConfig, partition, ranges, reason, restart_live: bool, unpause: bool, wait: bool) -> int:
    """Replay offset ranges of one partition of STREAM, insert-only, through its recover DAG.

    The params are checked as the DAG checks them, before anything starts. Offsets already gone
    from the log are reported as LOST and fail the run (exit 1), after the rest is recovered.

    \b
    Example:
      tidemark recover telemetry --partition 2 --ranges 1200-1800 --reason "gap found by hand"
    """
    from tidemark_cli.airflow_connection import connect_to_airflow, ready_dag
    from tidemark_cli.recovery_run import print_recovery_result, recover_dag_id, recovery_params

    request = recovery_params(stream, partition, ranges, reason, restart_live)
    dag_id = recover_dag_id(stream)
    connection = connect_to_airflow()
    ready_dag(connection, dag_id, unpause)
    run_id = connection.api.trigger(dag_id, request.to_json(), run_id=_new_run_id())
    replayed = ", ".join(f"{r.start}-{r.end}" for r in request.ranges)
    _console.print(
        f"Triggered {dag_id}: partition {request.partition}, offsets {replayed}"
        + (", then a persist run (--restart-live)" if request.restart_live else "")
        + f"\nRun {escape(run_id)}: {connection.run_url(dag_id, run_id)}",
        soft_wrap=True,
    )
    return _follow(connection, dag_id, run_id, None, "recover", print_recovery_result) if wait else 0


@cli.command(short_help="Re-drive quarantined records that now decode through the redrive DAG.")
@stream_argument
@click.option("--reason", help="The quarantine reason to re-drive, e.g. unknown_schema_id or missing_field.")
@click.option(
    "--hours", help='Only records written in these hours (log time, UTC): "2026-11-28T05:00Z..2026-11-28T08:00Z".'
)
@click.option("--unpause", is_flag=True, help="Unpause the redrive DAG if it is paused.")
@click.option(
    "--wait/--no-wait", default=True, show_default=True, help="Follow the run until it ends, with a progress bar."
)
def redrive(stream: StreamConfig, reason, hours, unpause: bool, wait: bool) -> int:
    """Move STREAM's quarantined records of one reason that now decode into events or late, once.

    Run it after the contract is fixed (a field declared, a registry schema restored). The params
    are checked as the DAG checks them, before anything starts. Records that still do not decode
    stay in quarantine and are counted by their reason now.

    \b
    Example:
      tidemark redrive telemetry --reason unknown_schema_id --hours 2026-11-28T05:00Z..2026-11-28T08:00Z
    """
    from tidemark_cli.airflow_connection import connect_to_airflow, ready_dag
    from tidemark_cli.redrive_run import print_redrive_result, redrive_dag_id, redrive_params

    request = redrive_params(stream, reason, hours)
    dag_id = redrive_dag_id(stream)
    connection = connect_to_airflow()
    ready_dag(connection, dag_id, unpause)
    params = {"stream": request.stream, "reason": request.reason, "hours": hours or ""}
    run_id = connection.api.trigger(dag_id, params, run_id=_new_run_id())
    _console.print(
        f"Triggered {dag_id}: reason {request.reason}"
        + (f", hours {request.hours_from}..{request.hours_to}" if request.hours_from else "")
        + f"\nRun {escape(run_id)}: {connection.run_url(dag_id, run_id)}",
        soft_wrap=True,
    )
    return _follow(connection, dag_id, run_id, None, "redrive", print_redrive_result) if wait else 0


@cli.command(short_help="Erase the records a predicate names, for good, through the erasure DAG.")
@stream_argument
@click.option("--where", help="The records: payload columns = 'value' (or IN (...)), joined by AND.")
@click.option("--requested-by", "--by", "requested_by", help="Who asked for the erasure (kept with it).")
@click.option("--reason", help="Why, e.g. a ticket number (kept with it).")
@click.option("--unpause", is_flag=True, help="Unpause the erasure DAG if it is paused.")
@click.option(
    "--wait/--no-wait", default=True, show_default=True, help="Follow the run until it ends, with a progress bar."
)
def erase(stream: StreamConfig, where, requested_by, reason, unpause: bool, wait: bool) -> int:
    """Remove STREAM's records WHERE names from events, late and quarantine, and keep them out.

    Each erased record is listed in the stream's erasures table with who asked, why and when; no
    job writes it again, and the quality checks count it as erased, not missing. The predicate is
    checked against the stream's payload columns before anything starts.

    \b
    Example:
      tidemark erase telemetry --where "device_id = 'scooter-7'" --by ana --reason "GDPR 2026-118"
    """
    from tidemark_cli.airflow_connection import connect_to_airflow, ready_dag
    from tidemark_cli.erase_run import erase_dag_id, erase_params, print_erase_result

    request = erase_params(stream, where, requested_by, reason)
    dag_id = erase_dag_id(stream)
    connection = connect_to_airflow()
    ready_dag(connection, dag_id, unpause)
    run_id = connection.api.trigger(dag_id, request.to_json(), run_id=_new_run_id())
    _console.print(
        f"Triggered {dag_id}: where {request.where}\nRun {escape(run_id)}: {connection.run_url(dag_id, run_id)}",
        soft_wrap=True,
    )
    return _follow(connection, dag_id, run_id, None, "erase", print_erase_result) if wait else 0


@cli.command("accept-lost", short_help="Accept a range lost to retention, so the live job reads on past it.")
@stream_argument
@click.option("--stream", "stream_name", help="The stream (the same as the STREAM argument).")
@click.option("--partition", help="The partition the persist job stopped for.")
@click.option("--range", "range_text", help='The positions it reported lost, end exclusive: "40-70".')
@click.option("--by", help="Who accepts the loss. Default: the OS user.")
@click.option("--reason", help="Why (kept in the ledger commit and the job's log).")
@click.option("--unpause", is_flag=True, help="Unpause the accept-lost DAG if it is paused.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Follow the run until it ends.")
def accept_lost(stream: StreamConfig, stream_name, partition, range_text, by, reason, unpause: bool, wait: bool) -> int:
    """Record that a range of STREAM lost to retention is accepted as lost, through its accept-lost
    DAG: one ledger row with who and when. The next persist run passes over exactly that range;
    a later loss still stops it, and the checks still report it LOST.

    The range must start at the partition's live position and end at or before the log's earliest
    retained position now (what the stopped job reported). It is checked against the ledger and
    the log before anything is triggered: anything else is refused (exit 2), nothing written.

    \b
    Example:
      tidemark accept-lost --stream telemetry --partition 1 --range 40-70 --reason "no other copy"
    """
    from tidemark_cli.accept_lost_run import accept_lost_dag_id, accept_lost_params, print_accept_lost_result
    from tidemark_cli.airflow_connection import connect_to_airflow, ready_dag

    stream = _named_stream(stream, stream_name)
    request = accept_lost_params(stream, partition, range_text, by, reason)
    dag_id = accept_lost_dag_id(stream)
    connection = connect_to_airflow()
    ready_dag(connection, dag_id, unpause)
    params = {
        "stream": request.stream,
        "partition": request.partition,
        "range": f"{request.start}-{request.end}",
        "by": request.accepted_by,
        "reason": request.reason or "",
    }
    run_id = connection.api.trigger(dag_id, params, run_id=_new_run_id())
    _console.print(
        f"Triggered {dag_id}: partition {request.partition}, [{request.start}, {request.end}) by {request.accepted_by}"
        f"\nRun {escape(run_id)}: {connection.run_url(dag_id, run_id)}",
        soft_wrap=True,
    )
    return _follow(connection, dag_id, run_id, None, "accept_lost", print_accept_lost_result) if wait else 0


def _named_stream(stream: StreamConfig, name: str | None) -> StreamConfig:
    """The stream, named by STREAM or ``--stream`` (a usage error, exit 2, when both differ)."""
    if name is not None and name != stream.name:
        raise click.BadParameter(
            f"STREAM says {stream.name!r} and --stream says {name!r}: name the stream once", param_hint="'--stream'"
        )
    return stream


@cli.command(short_help="Show the latest quality report, per partition.")
@stream_argument
@click.option(
    "--run", "run_name", help="A quality run's name (its folder under reports/<stream>/runs/). Default: the newest."
)
@click.option(
    "--persistence",
    is_flag=True,
    help="Also print the per-partition persistence report (log against lake, without Spark; asks the log).",
)
def report(stream: StreamConfig, run_name, persistence: bool) -> int:
    """The latest quality report of STREAM: each partition's status, the checks, the recovery
    requests, and the paths of the HTML summary and the Data Docs.

    Read from the quality run's summary.json, without starting Spark. --persistence adds the
    offsets in the log against the records in the lake, per partition (read with deltalake and
    the log's client, about a second; the log must answer).

    \b
    Example:
      tidemark report telemetry
    """
    from tidemark_cli.quality_report import latest_summary, print_summary, read_summary

    path = latest_summary(tidemark_home() / "reports", stream.name, run_name)
    print_summary(_console, read_summary(path), path)
    if persistence:
        from tidemark_cli.persistence_report import print_persistence_report

        _console.print("\nPersistence per partition:")
        print_persistence_report(stream)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The console script. Returns the exit code (see the module's docstring)."""
    try:
        # Every command runs with the embedded environment, as Airflow and Spark do; `env` prints it.
        stack_environment = embedded_environment()
        os.environ.update(stack_environment)
        code = cli.main(
            args=argv, prog_name="tidemark", standalone_mode=False, obj={STACK_ENVIRONMENT: stack_environment}
        )
    except click.exceptions.Exit as done:  # --help
        return done.exit_code
    except click.ClickException as error:  # usage errors: exit 2, with the usage line
        error.show()
        return error.exit_code
    except (CommandFailed, StackError, JarsError, StreamConfigError) as error:
        # One unwrapped line (or a few): paths and commands in it must stay copyable.
        _errors.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        return EXIT_FAILED
    except click.Abort:
        _errors.print("interrupted")
        return 130
    return code if isinstance(code, int) else 0


def _follow(
    connection,
    dag_id: str,
    run_id: str,
    progress_task: str | None,
    result_task: str,
    print_result,
    result_map_index: int = -1,
) -> int:
    from tidemark_cli.run_display import follow_run, interrupted, print_failure
    from tidemark_cli.run_follower import RunFollower

    try:
        snapshot = follow_run(_console, RunFollower(connection.api, dag_id, run_id, progress_task), connection)
    except KeyboardInterrupt:
        return interrupted(_console, connection, dag_id, run_id)
    if snapshot.state == "success":
        print_result(_console, connection.api.return_value(dag_id, run_id, result_task, result_map_index))
        _console.print(f"[bold green]The run succeeded.[/] {connection.run_url(dag_id, run_id)}", soft_wrap=True)
        return 0
    result = connection.api.return_value(dag_id, run_id, result_task, result_map_index)
    if result:
        print_result(_console, result)
    print_failure(_console, connection, dag_id, run_id, snapshot)
    return EXIT_FAILED


def _new_run_id() -> str:
    """A run id like Airflow's own, named after the CLI so the UI shows where a run came from."""
    return f"tidemark_cli__{datetime.now(UTC).isoformat()}"
