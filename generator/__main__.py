"""tidemark-generate: simulated scooter telemetry into a stream's Kafka topic or Kinesis stream.

    tidemark-generate backlog --hours 2 --bad-records 20
    tidemark-generate backlog --hours 4 --end 2026-11-21T09:00:00Z --profiles heavy --rate-scale 2
    tidemark-generate live --duration 10m
    python -m generator --bootstrap 127.0.0.1:19092 --topic scratch backlog --hours 1
    tidemark-generate --stream rides --kinesis-stream scratch backlog --hours 1

The stream's source.kind says where records go: a Kafka topic (--bootstrap, --topic override
it) or a Kinesis stream (--kinesis-stream, --kinesis-endpoint override it; generator/kinesis_sink.py,
credentials from source.aws_conn_id or boto3's default chain). Both get the same records: the same
JSON values, the device id as the key (Kinesis: the partition key), one profile per partition (Kinesis:
per open shard).

``backlog`` writes simulated hours that ended at --end as fast as the broker takes them; ``live``
produces at the real pace, event time = wall clock minus disorder, until --duration is over.
One profile per partition, in partition order (cycled when fewer names than partitions).
Every record's Kafka timestamp is its event time; a bad record's is the time it was inserted.
Kinesis stamps arrival time itself: there the event time is only in the payload.

Prints one JSON summary line on stdout. Exit codes: 0 done, 1 Kafka or Kinesis could not take the
records, 2 bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from generator.bad_records import BadRecord
from generator.destinations import DESTINATION_ERRORS, foreign_flag, open_destination
from generator.kafka_target import KafkaTarget
from generator.kinesis_sink import KinesisSink
from generator.production_plan import ProductionPlan
from generator.production_summary import PartitionTally, run_summary
from generator.profiles import DEFAULT_PROFILE_ORDER, HOUR_MS, MINUTE_MS, PROFILES, RateProfile, profile_named
from generator.value_encoders import value_encoder
from tidemark.config_values import endpoint_url
from tidemark.duration import format_duration_ms, parse_duration_ms
from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.registry_access import RegistryAccessError
from tidemark.stream_config import StreamConfig, StreamConfigError, load_stream
from tidemark.writer_schemas import RegistryUnavailableError

REPO_ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        stream = load_stream(args.conf, args.stream)
    except StreamConfigError as error:
        parser.error(str(error))

    foreign = foreign_flag(args, stream)
    if foreign:
        parser.error(foreign)
    start_ms, end_ms = _window(args, stream, parser)
    plan = ProductionPlan(
        profiles=_profiles_by_partition(args.profiles or DEFAULT_PROFILE_ORDER, stream.source.created_partitions),
        start_ms=start_ms,
        end_ms=end_ms,
        seed=args.seed,
        max_disorder_ms=_max_disorder_ms(args, stream, parser),
        rate_scale=args.rate_scale,
        bad_records=args.bad_records,
        event_time_field=stream.payload.event_time_field,
    )
    tallies = [PartitionTally(partition, profile.name) for partition, profile in enumerate(plan.profiles)]
    try:
        destination = open_destination(args, stream, len(plan.profiles))
        print(
            f"{parser.prog}: {args.command} {format_event_time(start_ms)} .. {format_event_time(end_ms)} to "
            f"{destination.described}; partitions " + ", ".join(f"{t.partition}:{t.profile}" for t in tallies),
            file=sys.stderr,
        )
        # The registry's subject is named after the topic (or Kinesis stream), as serializers name it.
        encode = value_encoder(stream, destination.fields.get("topic") or destination.fields["kinesis_stream"])
        elapsed_s, interrupted = _produce(plan, destination.target, tallies, encode, paced=args.command == "live")
    except (*DESTINATION_ERRORS, RegistryUnavailableError, RegistryAccessError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1

    run = {
        "command": args.command,
        "stream": stream.name,
        **destination.summary_fields(),
        "window_start": format_event_time(start_ms),
        "window_end": format_event_time(end_ms),
        "seed": args.seed,
        "rate_scale": args.rate_scale,
        "max_disorder_ms": plan.max_disorder_ms,
        "transaction_size": args.transaction_size,
        "interrupted": interrupted,
    }
    line = json.dumps(run_summary(run, tallies, elapsed_s))
    print(line)
    if args.summary_file:
        try:
            Path(args.summary_file).write_text(line + "\n")
        except OSError as error:
            print(f"{parser.prog}: error: could not write --summary-file: {error}", file=sys.stderr)
            return 1
    return 0


def _window(args: argparse.Namespace, stream: StreamConfig, parser: argparse.ArgumentParser) -> tuple[int, int]:
    """[start_ms, end_ms) of the run, ms UTC: past hours for backlog, from now on for live."""
    now_ms = _now_ms()
    if args.command == "live":
        return now_ms, now_ms + args.duration
    end_ms = args.end if args.end is not None else now_ms // MINUTE_MS * MINUTE_MS
    if end_ms > now_ms:
        # Kafka refuses records stamped ahead of its clock (log.message.timestamp.after.max.ms,
        # 1 h by default), and a backlog of the future would seal hours that have not happened.
        parser.error(f"argument --end: {format_event_time(end_ms)} is in the future; a backlog ends at or before now")
    start_ms = end_ms - round(args.hours * HOUR_MS)
    if start_ms < now_ms - stream.retention_ms:
        _note(
            parser,
            f"the backlog starts more than the stream's retention ({format_duration_ms(stream.retention_ms)}) ago; "
            f"a broker with that retention deletes such records",
        )
    return start_ms, end_ms


def _profiles_by_partition(names: tuple[str, ...], stream_partitions: int) -> tuple[RateProfile, ...]:
    """One profile per partition, names cycled; more names than partitions fill more partitions."""
    partitions = max(stream_partitions, len(names))
    return tuple(profile_named(names[partition % len(names)]) for partition in range(partitions))


def _max_disorder_ms(args: argparse.Namespace, stream: StreamConfig, parser: argparse.ArgumentParser) -> int:
    tolerance_ms = stream.event_time.max_out_of_orderness_ms
    if args.max_disorder is None:
        return tolerance_ms
    if args.max_disorder > tolerance_ms:
        _note(
            parser,
            f"--max-disorder {format_duration_ms(args.max_disorder)} exceeds the stream's max_out_of_orderness "
            f"{format_duration_ms(tolerance_ms)}; some records will be late on purpose",
        )
    return args.max_disorder


def _note(parser: argparse.ArgumentParser, message: str) -> None:
    print(f"{parser.prog}: note: {message}", file=sys.stderr)


def _produce(
    plan: ProductionPlan,
    target: KafkaTarget | KinesisSink,
    tallies: list[PartitionTally],
    encode: Callable[[dict], bytes],
    paced: bool,
) -> tuple[float, bool]:
    """Produce the plan's records, each value made by ``encode`` (generator.value_encoders);
    returns (seconds from first produce to flushed, interrupted by Ctrl-C).

    ``paced`` holds each record until the wall clock reaches its nominal time (live mode) and
    then runs on to the end of the window, so a live run lasts exactly its duration.
    """
    started = time.monotonic()
    interrupted = False
    try:
        for record in plan.records():
            if paced:
                _wait_until(target, record.nominal_time_ms)
            if isinstance(record, BadRecord):
                target.send(record.partition, record.key, record.value, record.nominal_time_ms)
                tallies[record.partition].count_bad_record()
            else:
                payload = record.payload
                value = encode(payload)
                target.send(record.partition, payload["device_id"].encode(), value, record.event_time_ms)
                tallies[record.partition].count_event(record.event_time_ms)
        if paced:
            _wait_until(target, plan.end_ms)
    except KeyboardInterrupt:
        # Stop producing, but still flush what is queued and report it.
        interrupted = True
    target.close()
    return time.monotonic() - started, interrupted


def _wait_until(target: KafkaTarget | KinesisSink, due_ms: int) -> None:
    while (delay_ms := due_ms - _now_ms()) > 0:
        target.wait(delay_ms / 1000)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidemark-generate",
        description="Produce simulated scooter telemetry into a stream's Kafka topic or Kinesis stream.",
    )
    parser.add_argument(
        "--conf",
        default=os.environ.get("TIDEMARK_CONF") or str(REPO_ROOT / "conf" / "streams.yaml"),
        help="streams.yaml (default: $TIDEMARK_CONF or conf/streams.yaml)",
    )
    parser.add_argument("--stream", default="telemetry", help="stream name in the configuration (default: telemetry)")
    parser.add_argument("--bootstrap", help="Kafka bootstrap servers (default: the stream's)")
    parser.add_argument("--topic", help="topic to write to (default: the stream's)")
    parser.add_argument(
        "--kinesis-stream",
        help="Kinesis stream to write to, for a stream with source.kind kinesis (default: the stream's)",
    )
    parser.add_argument(
        "--kinesis-endpoint",
        type=_endpoint,
        help="Kinesis endpoint URL, e.g. http://127.0.0.1:19450 (default: the stream's source.endpoint, else AWS's)",
    )
    parser.add_argument("--seed", type=int, default=7, help="same seed, same records (default: 7)")

    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument(
        "--profiles",
        type=_profile_names,
        help=f"comma-separated profile per partition, from {', '.join(PROFILES)} "
        f"(default: {','.join(DEFAULT_PROFILE_ORDER)}; cycled over the partitions)",
    )
    shared.add_argument(
        "--rate-scale", type=_rate_scale, default=1.0, help="multiplies every rate except slow's (default: 1)"
    )
    shared.add_argument(
        "--max-disorder",
        type=_duration,
        help="largest amount an event time lags its due time, e.g. 30s (default: the stream's max_out_of_orderness)",
    )
    shared.add_argument(
        "--bad-records", type=_non_negative_int, default=0, help="malformed records spread over the partitions"
    )
    shared.add_argument(
        "--transaction-size",
        type=_positive_int,
        help="write with a transactional producer, committing every N records, as exactly-once producers "
        "(Kafka Streams, Flink, Kafka Connect) do: each commit leaves a marker offset that holds no record",
    )
    shared.add_argument("--summary-file", help="also write the JSON summary to this file")

    commands = parser.add_subparsers(dest="command", required=True, metavar="{backlog,live}")
    backlog = commands.add_parser("backlog", parents=[shared], help="write simulated past hours as fast as possible")
    backlog.add_argument("--hours", type=_positive_hours, required=True, help="simulated hours to write, e.g. 2 or 0.5")
    backlog.add_argument(
        "--end", type=_utc_time, help="end of the window, ISO-8601 with offset (default: now, floored to the minute)"
    )
    live = commands.add_parser("live", parents=[shared], help="produce at the real pace for a while")
    live.add_argument(
        "--duration", type=_positive_duration, default=60_000, help="how long to run, e.g. 60s, 10m (default: 60s)"
    )
    return parser


def _profile_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated profile names, got {text!r}")
    for name in names:
        if name not in PROFILES:
            raise argparse.ArgumentTypeError(f"unknown profile {name!r}; choose from {', '.join(PROFILES)}")
    return names


def _positive_float(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{what} must be a number greater than 0, got {text!r}")
    return value


def _positive_hours(text: str) -> float:
    return _positive_float(text, "hours")


def _rate_scale(text: str) -> float:
    return _positive_float(text, "the rate scale")


def _non_negative_int(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _duration(text: str) -> int:
    try:
        return parse_duration_ms(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive_duration(text: str) -> int:
    duration_ms = _duration(text)
    if duration_ms <= 0:
        raise argparse.ArgumentTypeError(f"the duration must be greater than zero, got {text!r}")
    return duration_ms


def _endpoint(text: str) -> str:
    try:
        return endpoint_url(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _utc_time(text: str) -> int:
    try:
        return parse_event_time(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


if __name__ == "__main__":
    sys.exit(main())
