"""The catch-up benchmark's figures (benchmarks/catch_up_*.py, continuous_latency.py): ratios and
targets, "no ratio when a run failed", Spark's plain watermark replayed and the rows it keeps,
nearest-rank percentiles, latency and visibility. No Spark, no broker: expectations are worked
out by hand in each test."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # benchmarks/ is scripts, not an installed package

from benchmarks.catch_up_figures import (  # noqa: E402
    percentile,
    ratio,
    records_per_second,
    replay_plain_watermark,
    target,
    watermarks_from_maxima,
)
from benchmarks.catch_up_report import render_markdown  # noqa: E402
from benchmarks.catch_up_side_by_side import (  # noqa: E402
    failures,
    kept_under_spark_watermark,
    parse_args,
    run_profile,
)
from benchmarks.continuous_latency import EventsVisibility, latency_figures  # noqa: E402

MINUTE_MS = 60_000


def minutes(*values: float) -> list[int]:
    return [round(v * MINUTE_MS) for v in values]


# --- ratios and targets ----------------------------------------------------------------------


def test_ratio_divides_the_numerators_figure_by_the_smallest_denominator():
    runs = {"a": {"rps": 3_000}, "b": {"rps": 6_000}, "c": {"rps": 50_000}, "d": {"rps": 10_000}}

    assert ratio(runs, "a", ["b"], "rps") == {"value": 0.5, "of": "a / b", "key": "rps"}
    # min(c, d) = 10,000: the lower ceiling is the one that bounds tidemark.
    assert ratio(runs, "a", ["c", "d"], "rps") == {"value": 0.3, "of": "a / min(c, d)", "key": "rps"}


def test_a_ratio_at_its_limit_passes_and_above_it_fails():
    at_limit = {"x": {"mb": 4_400}, "y": {"mb": 4_000}}  # 1.1
    above = {"x": {"mb": 4_440}, "y": {"mb": 4_000}}  # 1.11

    assert ratio(at_limit, "x", ["y"], "mb", limit=1.1)["result"] == "PASS"
    assert ratio(above, "x", ["y"], "mb", limit=1.1) == {
        "value": 1.11,
        "of": "x / y",
        "key": "mb",
        "limit": 1.1,
        "result": "FAIL",
    }


def test_a_throughput_ratio_passes_at_or_above_its_floor():
    runs = {"a": {"rps": 45_000}, "b": {"rps": 45_000}, "slow": {"rps": 22_500}}

    assert ratio(runs, "a", ["b"], "rps", at_least=1.0)["result"] == "PASS"
    assert ratio(runs, "slow", ["b"], "rps", at_least=1.0) == {
        "value": 0.5,
        "of": "slow / b",
        "key": "rps",
        "at_least": 1.0,
        "result": "FAIL",
    }
    assert ratio({"a": {"rps": 1}, "b": {"failed": "x"}}, "a", ["b"], "rps", at_least=1.0) == {
        "no_ratio": "b failed",
        "at_least": 1.0,
    }


def test_no_ratio_when_a_run_failed_or_did_not_run():
    runs = {"a": {"rps": 3_000}, "b": {"failed": "exited 1; log ...\nTraceback"}, "c": {"rps": 50_000}}

    assert ratio(runs, "a", ["b"], "rps") == {"no_ratio": "b failed"}
    # d never ran: a ceiling ratio over c alone would flatter tidemark, so there is none.
    assert ratio(runs, "a", ["c", "d"], "rps") == {"no_ratio": "d failed"}
    assert ratio({"a": {"failed": "x"}, "b": {"failed": "y"}}, "a", ["b"], "rps") == {"no_ratio": "a, b failed"}
    # A target keeps its limit but gets neither a value nor a result.
    assert ratio(runs, "a", ["b"], "rps", limit=1.0) == {"no_ratio": "b failed", "limit": 1.0}


def test_target_without_a_value_says_why():
    assert target(39.9, 40.0) == {"value": 39.9, "limit": 40.0, "result": "PASS"}
    assert target(math.inf, 40.0)["result"] == "FAIL"
    assert target(None, 40.0, "(a continuous) failed") == {"no_figure": "(a continuous) failed", "limit": 40.0}


def test_records_per_second():
    assert records_per_second(2_016_000, 352.9) == 5_713
    with pytest.raises(ValueError):
        records_per_second(10, 0)


# --- Spark's plain global watermark, replayed --------------------------------------------------


# Two partitions; event times in minutes, by offset. Worked out by hand with a delay of 10 min:
#   batch 0 runs with no watermark: keeps all 4 rows; its max is 300 -> watermark 290
#   batch 1 (watermark 290): p0 keeps 330; p1 drops 30 and 289.999, keeps 290 (equal is kept);
#           its max is 330 -> 320
#   batch 2 (watermark 320): p1 drops 310; its max 310 would give 300, but a watermark never goes back
#   batch 3 (watermark 320): p1 keeps 325
EVENT_TIMES = {0: minutes(10, 300, 330), 1: minutes(5, 20, 30, 289.999, 290, 310, 325)}
BATCHES = [  # out of order on purpose: the replay goes by batch id
    {
        "batch_id": 2,
        "offsets": {"0": [3, 3], "1": [5, 6]},
        "max_event_time_ms": {"1": minutes(310)[0]},
        "rows_per_partition": {"0": 0, "1": 1},
    },
    {
        "batch_id": 0,
        "offsets": {"0": [0, 2], "1": [0, 2]},
        "max_event_time_ms": {"0": minutes(300)[0], "1": minutes(20)[0]},
        "rows_per_partition": {"0": 2, "1": 2},
    },
    {
        "batch_id": 3,
        "offsets": {"0": [3, 3], "1": [6, 7]},
        "max_event_time_ms": {"1": minutes(325)[0]},
        "rows_per_partition": {"0": 0, "1": 1},
    },
    {
        "batch_id": 1,
        "offsets": {"0": [2, 3], "1": [2, 5]},
        "max_event_time_ms": {"0": minutes(330)[0], "1": minutes(290)[0]},
        "rows_per_partition": {"0": 1, "1": 3},
    },
]
DELAY_MS = 10 * MINUTE_MS


def test_plain_watermark_drops_rows_behind_the_watermark_of_their_batch():
    replayed = replay_plain_watermark(BATCHES, EVENT_TIMES, DELAY_MS)

    assert [b.batch_id for b in replayed] == [0, 1, 2, 3]
    assert [b.watermark_ms for b in replayed] == [None, *minutes(290, 320, 320)]
    assert [b.dropped for b in replayed] == [{0: 0, 1: 0}, {0: 0, 1: 2}, {0: 0, 1: 1}, {0: 0, 1: 0}]
    assert [b.kept for b in replayed] == [{0: 2, 1: 2}, {0: 1, 1: 1}, {0: 0, 1: 0}, {0: 0, 1: 1}]


def test_watermarks_from_the_observed_maxima_match_the_replay():
    assert watermarks_from_maxima(BATCHES, DELAY_MS) == {
        0: None,
        1: minutes(290)[0],
        2: minutes(320)[0],
        3: minutes(320)[0],
    }


def test_kept_rows_per_partition_and_the_cross_check():
    kept = kept_under_spark_watermark(BATCHES, EVENT_TIMES, DELAY_MS)

    assert kept["kept"] == 7 and kept["dropped"] == 3
    assert kept["kept_per_partition"] == {"0": 3, "1": 4}
    assert kept["dropped_per_partition"] == {"0": 0, "1": 3}
    assert kept["replay_agrees"] is True


def test_the_cross_check_fails_when_the_batches_and_the_records_disagree():
    # (b) says batch 1 read 4 rows of partition 1; the offsets hold 3.
    inconsistent = [dict(b, rows_per_partition={"0": 1, "1": 4}) if b["batch_id"] == 1 else b for b in BATCHES]

    assert kept_under_spark_watermark(inconsistent, EVENT_TIMES, DELAY_MS)["replay_agrees"] is False


# --- percentiles and latency -------------------------------------------------------------------


def test_nearest_rank_percentile():
    hundred = list(range(100, 0, -1))  # 1..100, unsorted
    assert percentile(hundred, 0.50) == 50
    assert percentile(hundred, 0.99) == 99
    assert percentile(hundred, 1.0) == 100
    assert percentile([3, 1, 2], 0.5) == 2
    assert percentile([7], 0.99) == 7
    assert percentile([1, 2, math.inf], 0.99) == math.inf
    assert percentile([], 0.5) is None
    with pytest.raises(ValueError):
        percentile([1], 0)


def test_latency_of_every_record_from_its_log_time_to_when_it_was_seen():
    # Record i (1..100) logged at 1,000 ms and seen i seconds later.
    seen = {(0, i): (1_000, 1_000 + i * 1_000) for i in range(1, 101)}

    assert latency_figures(seen, produced=100) == {
        "produced": 100,
        "visible": 100,
        "not_visible": 0,
        "p50_seconds": 50.0,
        "p99_seconds": 99.0,
        "max_seconds": 100.0,
    }


def test_records_never_seen_count_as_infinitely_late():
    seen = {(0, i): (0, i * 1_000) for i in range(1, 99)}  # 98 of 100 seen: 2% never visible

    figures = latency_figures(seen, produced=100)

    assert figures["not_visible"] == 2
    assert figures["p50_seconds"] == 50.0
    assert figures["p99_seconds"] == "never" and figures["max_seconds"] == "never"


def test_visibility_is_the_first_poll_that_saw_a_record(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    now = {"ms": 0}
    path = str(tmp_path / "events")
    visibility = EventsVisibility(path, clock=lambda: now["ms"])

    def append(partition: int, offsets: list[int], logged_ms: int) -> None:
        write_deltalake(
            path,
            pa.table(
                {
                    "source_partition": pa.array([partition] * len(offsets), pa.int32()),
                    "source_offset": pa.array(offsets, pa.int64()),
                    "log_timestamp": pa.array([logged_ms * 1000] * len(offsets), pa.timestamp("us", tz="UTC")),
                }
            ),
            mode="append",
        )

    assert visibility.poll() == 0  # no table yet
    append(0, [0, 1], logged_ms=400)
    now["ms"] = 1_000
    assert visibility.poll() == 2
    now["ms"] = 2_000
    assert visibility.poll() == 0  # same version: nothing new, nothing re-stamped
    append(1, [0], logged_ms=1_500)
    now["ms"] = 3_000
    assert visibility.poll() == 1

    assert visibility.seen == {(0, 0): (400, 1_000), (0, 1): (400, 1_000), (1, 0): (1_500, 3_000)}


# --- the report and the options ----------------------------------------------------------------


def _report(scenarios: dict) -> dict:
    return {
        "command": "benchmarks/catch_up_side_by_side.py --records 100000",
        "measured_at": "2026-11-22T20:00:00Z",
        "machine": {"cores": 2, "python": "3.11.7"},
        "options": {"max_records_per_batch": 50_000},
        "scenarios": scenarios,
        "failed": failures(scenarios),
    }


def test_a_failed_peer_is_listed_and_its_ratio_is_not_written():
    a = {
        "records": 144_000,
        "batches": 4,
        "wall_seconds": 50.4,
        "records_per_second": 2_857,
        "peak_rss_megabytes": 4_004,
    }
    runs = {"a": a, "b": {"failed": "spark_kafka_delta.py exited 1; log /tmp/b/job.log:\nNoClassDefFoundError"}}
    scenarios = {
        "uniform": {
            "backlog": {"records": 144_000, "hours": 2, "profiles": ["heavy"]},
            "runs": runs,
            "ratios": {"records_per_second a/b": ratio(runs, "a", ["b"], "records_per_second")},
            "scenario_seconds": 80.0,
        }
    }

    report = _report(scenarios)
    markdown = render_markdown(report)

    assert report["failed"] == [
        "uniform run b: spark_kafka_delta.py exited 1; log /tmp/b/job.log: … NoClassDefFoundError"
    ]
    assert "| records_per_second a/b | no ratio: b failed | – | – |" in markdown
    assert "FAILED: spark_kafka_delta.py exited 1" in markdown
    assert "| (a) tidemark, aligned | 144,000 | 4 | 50.4 | 2,857 | 4,004 |" in markdown


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--scenarios", "uniform,bogus"], "--scenarios"),
        (["--records", "0"], "--records"),
        (["--max-records-per-batch", "many"], "--max-records-per-batch"),
        (["--latency-minutes", "-1"], "--latency-minutes"),
    ],
)
def test_a_bad_option_stops_at_start_naming_it(argv, option, capsys):
    with pytest.raises(SystemExit) as stopped:
        parse_args(argv)

    assert stopped.value.code == 2
    assert option in capsys.readouterr().err


def test_the_profile_of_a_run_comes_from_its_own_log_and_is_rendered(tmp_path):
    log = tmp_path / "job.log"
    lines = [
        "26/11/29 22:22:31 WARN NativeCodeLoader: Unable to load native-hadoop library",
        '{"event": "batch_persisted", "records": 200000, "late": 0, "quarantined": 0, "seconds": 12.5, '
        '"seconds_by_phase": {"tables_wait": 6.0, "read_and_write": 5.0, "seals_and_ledger": 1.5}}',
        '{"event": "batch_persisted", "records": 90, "late": 5, "quarantined": 5, "seconds": 3.0, '
        '"seconds_by_phase": {"tables_wait": 0.0, "read_and_write": 2.5, "seals_and_ledger": 0.5}}',
        '{"event": "query_finished", "seconds": {"startup": 4.0, "planning": 1.0, "writing": 15.5, '
        '"checkpoint": 0.5, "total": 21.0}}',
    ]
    log.write_text("\n".join(lines) + "\n")

    profile = run_profile(log, wall_s=30.0)

    assert profile["outside_query_seconds"] == 13.0, "30 s of process, 21 s of run_pipeline, 4 s of them to start"
    assert profile["batch_seconds_by_phase"] == {"read_and_write": 7.5, "seals_and_ledger": 2.0, "tables_wait": 6.0}
    assert [b["records"] for b in profile["batches"]] == [200_000, 100]
    a = {"records": 200_100, "batches": 2, "wall_seconds": 30.0, "records_per_second": 6_670}
    a["peak_rss_megabytes"], a["profile"] = 1_000, profile
    scenarios = {"uniform": {"backlog": {"records": 200_100, "hours": 1, "profiles": ["heavy"]}, "runs": {"a": a}}}
    markdown = render_markdown(_report(scenarios))
    assert "Where (a) tidemark, aligned spent its 30.0 s: 13.0 s outside its query" in markdown
    assert "Seconds per batch: 12.5 (tables 6.0) · 3.0." in markdown
    assert run_profile(tmp_path / "job.log", 30.0) is not None
    log.write_text(lines[1] + "\n")
    assert run_profile(log, 30.0) is None, "no query_finished line: the job failed"
