"""tidemark-generate's argument errors: exit code 2 and a message that says what was wrong, no Kafka."""

import pytest

from generator.__main__ import main


@pytest.fixture(autouse=True)
def stream_environment(monkeypatch):
    monkeypatch.setenv("TIDEMARK_LAKE_ROOT", "/tmp/lake")
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", "/tmp/checkpoints")
    monkeypatch.delenv("TIDEMARK_CONF", raising=False)


def run_expecting_usage_error(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["backlog", "--hours", "2", "--profiles", "steady,fast"],
            "unknown profile 'fast'; choose from steady, slow, heavy, bursty",
        ),
        (["backlog", "--hours", "2", "--profiles", "steady,,heavy"], "expected comma-separated profile names"),
        (["backlog", "--hours", "0"], "argument --hours: hours must be a number greater than 0"),
        (["backlog", "--hours", "-3"], "hours must be a number greater than 0"),
        (["backlog", "--hours", "two"], "hours must be a number greater than 0, got 'two'"),
        (["backlog", "--hours", "nan"], "hours must be a number greater than 0"),
        (["backlog"], "the following arguments are required: --hours"),
        (["backlog", "--hours", "1", "--end", "yesterday"], "'yesterday' is not an ISO-8601 time"),
        (["backlog", "--hours", "1", "--end", "2026-11-22T09:00:00"], "has no UTC offset"),
        (
            ["backlog", "--hours", "1", "--end", "2999-01-01T00:00:00Z"],
            "is in the future; a backlog ends at or before now",
        ),
        (["backlog", "--hours", "1", "--rate-scale", "0"], "the rate scale must be a number greater than 0"),
        (["backlog", "--hours", "1", "--max-disorder", "30"], "a bare number is ambiguous"),
        (["backlog", "--hours", "1", "--max-disorder=-5s"], "expected a non-negative duration"),
        (["backlog", "--hours", "1", "--bad-records", "-1"], "expected a whole number >= 0"),
        (["live", "--duration", "soon"], "argument --duration: expected a non-negative duration"),
        (["live", "--duration", "0s"], "the duration must be greater than zero"),
        (["live", "--profiles", "idle"], "unknown profile 'idle'"),
        (["--seed", "x", "backlog", "--hours", "1"], "argument --seed: invalid int value"),
        ([], "the following arguments are required: {backlog,live}"),
        (["replay"], "invalid choice: 'replay'"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(capsys, argv, message):
    assert message in run_expecting_usage_error(capsys, argv)


def test_an_unknown_stream_names_the_configured_ones(capsys):
    error = run_expecting_usage_error(capsys, ["--stream", "nope", "backlog", "--hours", "1"])
    assert "no stream named 'nope'; configured streams: rides, telemetry" in error


def test_a_missing_configuration_file_says_which(capsys, tmp_path):
    missing = tmp_path / "streams.yaml"
    error = run_expecting_usage_error(capsys, ["--conf", str(missing), "backlog", "--hours", "1"])
    assert str(missing) in error and "not found" in error


def test_the_configuration_comes_from_tidemark_conf(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TIDEMARK_CONF", str(tmp_path / "elsewhere.yaml"))
    assert "elsewhere.yaml" in run_expecting_usage_error(capsys, ["backlog", "--hours", "1"])


def test_an_unset_lake_root_is_reported_not_defaulted(capsys, monkeypatch):
    monkeypatch.delenv("TIDEMARK_LAKE_ROOT")
    assert "TIDEMARK_LAKE_ROOT is not set" in run_expecting_usage_error(capsys, ["backlog", "--hours", "1"])


def test_an_unreachable_broker_fails_with_exit_1_and_says_how_to_start_it(capsys, monkeypatch):
    # Port 1 on loopback refuses at once; shorten the probe so the test stays fast.
    monkeypatch.setattr("generator.kafka_target._PROBE_TIMEOUT_S", 1)
    assert main(["--bootstrap", "127.0.0.1:1", "backlog", "--hours", "1"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Kafka at 127.0.0.1:1 is not reachable: start it with `make up` or `tidemark up kafka`" in captured.err
    assert "Traceback" not in captured.err


def test_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "backlog" in out and "live" in out
