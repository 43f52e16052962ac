"""The tidemark CLI's arguments: --help everywhere, an unknown stream, bad params refused before
anything starts (exit 2, naming the option), and a stack that is not up (exit 1, `tidemark up`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from harness.cli_environment import cli_home, streams_file  # noqa: F401 (fixture)
from stack.ports import free_port
from tidemark.event_time_text import format_event_time
from tidemark_cli.commands import cli, main

COMMANDS = sorted(cli.commands)
DAY = "--start", "2026-11-21T00:00:00Z", "--end", "2026-11-22T00:00:00Z"


def test_the_cli_has_the_commands_of_the_issue_and_the_embedded_stacks():
    assert COMMANDS == [
        "accept-lost",
        "backfill",
        "config-reference",
        "create-kinesis-stream",
        "create-topic",
        "demo",
        "down",
        "env",
        "erase",
        "jars",
        "recover",
        "redrive",
        "refresh-topics",
        "report",
        "services",
        "status",
        "up",
    ]


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)], ids=["tidemark", *COMMANDS])
def test_every_command_has_help_with_an_example(cli_home, capsys, command):
    assert main([*command, "--help"]) == 0

    out = capsys.readouterr().out
    assert out.startswith(f"Usage: tidemark {' '.join(command)}".rstrip())
    if command:
        assert f"Example:\n    tidemark {command[0]}" in out


def test_an_unknown_stream_is_a_usage_error_listing_the_known_streams(cli_home, capsys, tmp_path):
    conf = streams_file(tmp_path, ["telemetry", "orders"])

    code = main(["--conf", str(conf), "backfill", "payments", *DAY])

    assert code == 2
    assert (
        f"Invalid value for 'STREAM': unknown stream 'payments'; the known streams are: orders, telemetry "
        f"(configured in {conf})"
    ) in " ".join(capsys.readouterr().err.split())


def test_no_stream_named_while_several_are_configured_lists_them(cli_home, capsys, tmp_path):
    conf = streams_file(tmp_path, ["telemetry", "orders"])

    assert main(["--conf", str(conf), "report"]) == 2
    assert "name one of the configured streams: orders, telemetry" in " ".join(capsys.readouterr().err.split())


def test_the_only_configured_stream_is_the_default(cli_home, capsys, tmp_path):
    # Past the stream argument, report looks for the stream's summary and names where.
    assert main(["--conf", str(streams_file(tmp_path, ["telemetry"])), "report"]) == 1
    assert (
        f"no quality summary of stream 'telemetry' in {cli_home / 'reports' / 'telemetry' / 'runs'}"
        in capsys.readouterr().err
    )


def test_a_configuration_that_does_not_validate_fails_naming_the_key(cli_home, capsys, tmp_path):
    conf = streams_file(tmp_path, ["telemetry"])
    conf.write_text(conf.read_text().replace("partitions: 4", "partitions: four"))

    assert main(["--conf", str(conf), "report", "telemetry"]) == 1
    assert "streams.telemetry.source.partitions" in capsys.readouterr().err


def _tomorrow() -> str:
    return format_event_time((int(time.time()) // 86400 + 2) * 86_400_000)


@pytest.mark.parametrize(
    "arguments, option, reason",
    [
        (["--start", "2026-11-21T00:00:00Z"], "--end", "required: an ISO-8601 time with a UTC offset"),
        (["--start", "2026-11-21T00:00:00", "--end", "2026-11-22T00:00:00Z"], "--start", "offset"),
        (["--start", "2026-11-22T00:00:00Z", "--end", "2026-11-21T00:00:00Z"], "--end", "is not after start"),
        (["--start", "2026-11-21T00:00:00Z", "--end", None], "--end", "is in the future"),
        ([*DAY, "--partitions", "0,4"], "--partitions", "partition 4 is outside [0, 4)"),
        ([*DAY, "--partitions", "one"], "--partitions", "'one' is not a partition number"),
        ([*DAY, "--shadow-name", "Bad Name"], "--shadow-name", "is not a table set name"),
        ([*DAY, "--target", "ledger"], "--target", "'ledger' is not one of 'shadow', 'events'"),
    ],
    ids=[
        "no-end",
        "no-offset",
        "end-before-start",
        "future",
        "partition-range",
        "partition-text",
        "shadow-name",
        "target",
    ],
)
def test_a_bad_backfill_param_is_refused_before_anything_starts(cli_home, capsys, arguments, option, reason):
    arguments = [_tomorrow() if value is None else value for value in arguments]

    code = main(["backfill", "telemetry", *arguments])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 2, error
    assert f"Invalid value for '{option}'" in error and reason in error


@pytest.mark.parametrize(
    "arguments, option, reason",
    [
        (["--ranges", "100-200", "--reason", "gap"], "--partition", "required"),
        (
            ["--partition", "7", "--ranges", "100-200", "--reason", "gap"],
            "--partition",
            "partition 7 is outside [0, 4)",
        ),
        (["--partition", "1", "--reason", "gap"], "--ranges", "no ranges given"),
        (["--partition", "1", "--ranges", "200-100", "--reason", "gap"], "--ranges", "start after end"),
        (["--partition", "1", "--ranges", "100-200,150-250", "--reason", "gap"], "--ranges", "overlap"),
        (["--partition", "1", "--ranges", "100-200"], "--reason", "say why this recovery runs"),
    ],
    ids=["no-partition", "partition-range", "no-ranges", "reversed", "overlapping", "no-reason"],
)
def test_a_bad_recovery_param_is_refused_before_anything_starts(cli_home, capsys, arguments, option, reason):
    code = main(["recover", "telemetry", *arguments])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 2, error
    assert f"Invalid value for '{option}'" in error and reason in error


@pytest.mark.parametrize(
    ("arguments", "option", "reason"),
    [
        ([], "--reason", "a quarantine reason code"),
        (["--reason", "missing_field", "--hours", "2026-11-28T05:00Z"], "--hours", '"FROM..TO"'),
        (["--reason", "missing_field", "--hours", "2026-11-28T05:00Z..2026-11-28T04:00Z"], "--hours", "before TO"),
    ],
    ids=["no-reason", "one-time", "reversed"],
)
def test_a_bad_redrive_param_is_refused_before_anything_starts(cli_home, capsys, arguments, option, reason):
    code = main(["redrive", "telemetry", *arguments])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 2, error
    assert f"Invalid value for '{option}'" in error and reason in error


@pytest.mark.parametrize(
    ("arguments", "option", "reason"),
    [
        (["--by", "ana"], "--where", "a predicate on the stream's payload columns"),
        (["--where", "owner = 'x'", "--by", "ana"], "--where", "'owner' is not a payload column"),
        (["--where", "device_id = 'x' OR 1 = 1", "--by", "ana"], "--where", "joined by AND"),
        (["--where", "device_id = 'x'"], "--requested-by", "who asked for the erasure"),
    ],
    ids=["no-where", "unknown-column", "or", "no-one-asked"],
)
def test_a_bad_erase_param_is_refused_before_anything_starts(cli_home, capsys, arguments, option, reason):
    code = main(["erase", "telemetry", *arguments])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 2, error
    assert f"Invalid value for '{option}'" in error and reason in error


def test_an_erase_result_is_printed_for_a_person():
    from rich.console import Console

    from tidemark.erasure_result import ErasureResult
    from tidemark_cli.erase_run import print_erase_result

    console = Console(record=True, width=200)
    result = ErasureResult(
        "telemetry",
        "9f2c",
        "device_id = 'd-3'",
        "ana",
        "2026-11-28T10:00:00.000Z",
        12,
        {"events": 9, "late": 1, "quarantine": 3},
        ("2026-11-28T04:00:00.000Z",),
        {"1": ("40", "52")},
        "x",
    )
    print_erase_result(console, result.to_json())
    text = " ".join(console.export_text().split())
    assert (
        "telemetry: erased 12 records where device_id = 'd-3' (9 from events, 1 from late, 3 from quarantine)" in text
    )
    assert "Erasure 9f2c, asked by ana." in text
    assert "Not read by live yet, so not erased yet: partition 1 (live at 40, log end 52)" in text


def test_a_redrive_result_is_printed_for_a_person():
    from rich.console import Console

    from tidemark.redrive_result import RedriveResult
    from tidemark_cli.redrive_run import print_redrive_result

    console = Console(record=True, width=200)
    result = RedriveResult(
        "telemetry", "missing_field", None, None, 40, 15, 23, 2, {"wrong_type": 3}, ("2026-11-28T04:00:00Z",), "x"
    )
    print_redrive_result(console, result.to_json())
    text = " ".join(console.export_text().split())
    assert (
        "40 quarantined records of reason missing_field were not yet in the lake; moved 15 to events and 23 to late"
        in text
    )
    assert (
        "(2 moved by another run meanwhile)" in text
        and "Still refused by the contract (left in quarantine): 3 wrong_type" in text
    )


@pytest.mark.parametrize(
    "command",
    [
        ["backfill", "telemetry", *DAY, "--partitions", "2,0"],
        ["recover", "telemetry", "--partition", "1", "--ranges", "300-350,100-200", "--reason", "gap"],
        ["redrive", "telemetry", "--reason", "unknown_schema_id", "--hours", "2026-11-28T05:00Z..2026-11-28T08:00Z"],
        ["erase", "telemetry", "--where", "device_id = 'scooter-7'", "--by", "ana"],
    ],
    ids=["backfill", "recover", "redrive", "erase"],
)
def test_valid_params_and_no_stack_say_how_to_start_it(cli_home, capsys, command):
    import os

    code = main(command)

    error = " ".join(capsys.readouterr().err.split())
    assert code == 1
    assert error == (
        f"error: Airflow does not answer at http://127.0.0.1:{os.environ['TIDEMARK_AIRFLOW_PORT']}: the stack is not "
        "up. Start it with `tidemark up` (or `make up`), then run this command again."
    )


def test_down_stops_airflow_the_inbox_the_registry_then_the_loopback_kinesis_and_s3_then_kafka_through_the_stacks_own_services(
    cli_home, capsys
):
    assert main(["down"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Airflow is not running.",
        "Alarm inbox is not running.",
        "Schema registry is not running.",
        "Loopback Kinesis is not running.",
        "Loopback S3 is not running.",
        "Kafka is not running.",
    ]


def test_an_unknown_service_is_a_usage_error(cli_home, capsys):
    assert main(["up", "spark"]) == 2
    assert "'spark' is not one of 'kafka', 's3', 'kinesis', 'registry', 'inbox', 'airflow'" in capsys.readouterr().err


def test_services_says_which_run_and_exits_3_when_one_does_not(cli_home, capsys):
    assert main(["services"]) == 3
    assert capsys.readouterr().out.splitlines() == [
        "kafka: not running",
        "s3: not running",
        "kinesis: not running",
        "inbox: not running",
        "airflow: not running",
    ], "the schema registry starts on demand: not listed unless named"
    assert main(["services", "registry"]) == 3
    assert capsys.readouterr().out.splitlines() == ["registry: not running"]


def test_env_prints_an_export_line_for_each_setting_the_shell_lacks_and_keeps_what_it_has(cli_home, capsys):
    import os

    os.environ["TIDEMARK_CONF"] = "/somewhere/streams.yaml"  # exported by the user: theirs wins, not printed

    assert main(["env"]) == 0

    exports = dict(line.removeprefix("export ").split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert "TIDEMARK_CONF" not in exports and "TIDEMARK_HOME" not in exports
    assert exports["TIDEMARK_KAFKA_BOOTSTRAP"] == f"127.0.0.1:{os.environ['TIDEMARK_KAFKA_PORT']}"
    assert exports["AIRFLOW_HOME"] == str(cli_home / "airflow")
    assert exports["PATH"].startswith(str(Path(sys.executable).parent) + ":")


def test_create_topic_needs_a_partition_count(cli_home, capsys):
    assert main(["create-topic", "orders"]) == 2
    assert "Missing option '--partitions'" in capsys.readouterr().err


def test_create_kinesis_stream_needs_a_shard_count(cli_home, capsys):
    assert main(["create-kinesis-stream", "rides"]) == 2
    assert "Missing option '--shards'" in capsys.readouterr().err


def test_create_kinesis_stream_on_a_loopback_that_is_not_up_says_how_to_start_it(cli_home, capsys):
    import os

    os.environ["TIDEMARK_KINESIS_PORT"] = str(free_port())  # nothing listens: a developer's own stack is never asked

    assert main(["create-kinesis-stream", "rides", "--shards", "2"]) == 1
    error = " ".join(capsys.readouterr().err.split())
    assert error == (
        f"error: The loopback Kinesis does not answer on http://127.0.0.1:{os.environ['TIDEMARK_KINESIS_PORT']}: "
        "start it with `tidemark up kinesis` (or `tidemark up`), then create the stream."
    )


def test_with_several_streams_configured_a_command_names_them_all_when_none_is_given(cli_home, capsys):
    assert main(["report"]) == 2  # the shipped file: telemetry (Kafka) and rides (Kinesis)
    assert "name one of the configured streams: rides, telemetry" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "option", "reason"),
    [
        (["--partition", "1", "--range", "70-40"], "--range", "START must be below END"),
        (["--partition", "x", "--range", "40-70"], "--partition", "a partition number"),
        (["--partition", "1", "--range", "40-70", "--by", "a:b"], "--by", "without ':'"),
        (["--stream", "orders", "--partition", "1", "--range", "40-70"], "--stream", "name the stream once"),
    ],
    ids=["reversed", "partition", "by", "two-streams"],
)
def test_a_bad_accept_lost_param_is_refused_before_anything_starts(cli_home, capsys, arguments, option, reason):
    code = main(["accept-lost", "telemetry", *arguments])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 2, error
    assert f"Invalid value for '{option}'" in error and reason in error


def test_accepting_a_loss_the_lake_does_not_have_is_refused_naming_why(cli_home, capsys):
    code = main(["accept-lost", "--stream", "telemetry", "--partition", "1", "--range", "40-70"])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 2, error
    assert "partition 1 of stream telemetry has no live ledger row" in error and "nothing was written" in error


def test_an_accept_lost_result_is_printed_for_a_person():
    from rich.console import Console

    from tidemark.accepted_loss import AcceptLostResult
    from tidemark_cli.accept_lost_run import print_accept_lost_result

    console = Console(record=True, width=200)
    result = AcceptLostResult("telemetry", 1, 40, 70, "alice", "2026-11-28T14:00:00.000Z", True, "no copy")
    print_accept_lost_result(console, result.to_json())
    text = " ".join(console.export_text().split())
    assert "telemetry, partition 1: [40, 70) accepted as lost by alice at 2026-11-28T14:00:00.000Z" in text
