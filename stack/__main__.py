"""``python -m stack``: run the embedded stack from a shell.

Exit codes: 0 done (also when there was nothing to do); 1 an expected failure: "error: ..."
on stderr saying what was wrong and what to do (a failed start adds the tail of the service's
log), no traceback; 3 ``status`` found a service not running.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from stack.environment import embedded_environment
from stack.errors import StackError
from stack.services import SERVICES, service, start_services, stop_services


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.stack_environment = embedded_environment()
        # Every command runs with the embedded environment, as Airflow and Spark will.
        os.environ.update(args.stack_environment)
        return args.command(args)
    except StackError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _env(args: argparse.Namespace) -> int:
    # Only what the caller's shell lacks (plus PATH): eval-ing the output twice is harmless,
    # and a variable the user exported keeps the user's value.
    for name, value in sorted(args.stack_environment.items()):
        print(f"export {name}={shlex.quote(value)}")
    return 0


def _jars(args: argparse.Namespace) -> int:
    # Until `tidemark jars` replaces this command: the jars live with the connectors now.
    from connectors.jars import GROUPS, JarsError, ensure_jars, jars_root

    root = jars_root()
    try:
        downloaded = ensure_jars(root, GROUPS)
    except JarsError as error:
        raise StackError(str(error)) from None
    if downloaded:
        print(f"Downloaded jar groups {', '.join(downloaded)} into {root}.")
    else:
        print(f"Jars are up to date in {root}.")
    return 0


def _start(args: argparse.Namespace) -> int:
    for message in start_services(args.services):
        print(message, flush=True)
    return 0


def _stop(args: argparse.Namespace) -> int:
    for message in stop_services(args.services):
        print(message, flush=True)
    return 0


def _status(args: argparse.Namespace) -> int:
    all_running = True
    for name in args.services or SERVICES:
        handle = service(name)
        print(handle.status())
        all_running = all_running and handle.is_running()
    return 0 if all_running else 3


def _demo(args: argparse.Namespace) -> int:
    from stack.demo import run_demo

    return run_demo(hours=args.hours)


def _create_topic(args: argparse.Namespace) -> int:
    from stack.kafka_broker import create_topic

    print(create_topic(os.environ["TIDEMARK_KAFKA_BOOTSTRAP"], args.name, args.partitions))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m stack",
        description="The embedded tidemark stack: Kafka (KRaft), a loopback S3 (s3proxy) and Airflow standalone on "
        "127.0.0.1, state under $TIDEMARK_HOME (.tidemark/).",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    env = commands.add_parser("env", help='print export lines: eval "$(python -m stack env)"')
    env.set_defaults(command=_env)

    jars = commands.add_parser("jars", help="download the pinned JVM jars (Maven), once")
    jars.set_defaults(command=_jars)

    for name, handler, text in (
        ("start", _start, "start services (default: kafka, s3, then airflow)"),
        ("stop", _stop, "stop services (default: airflow, s3, then kafka)"),
        ("status", _status, "show whether services run and answer (exit 3 if one does not run)"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("services", nargs="*", choices=[[], *SERVICES], metavar="SERVICE",
                             help="kafka, s3 or airflow; none means all")  # fmt: skip
        command.set_defaults(command=handler)

    topic = commands.add_parser("create-topic", help="create a Kafka topic (idempotent)")
    topic.add_argument("name")
    topic.add_argument("--partitions", type=int, required=True)
    topic.set_defaults(command=_create_topic)

    demo = commands.add_parser("demo", help="start everything, generate data, run the persist DAG, report")
    demo.add_argument("--hours", type=int, default=3, help="simulated hours of backlog to produce (default 3)")
    demo.set_defaults(command=_demo)
    return parser


if __name__ == "__main__":
    sys.exit(main())
