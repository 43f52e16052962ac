"""The demo prints the backfill task's XCom by the job's typed result (tidemark.backfill_result)."""

from tidemark.backfill_result import BackfillResult
from tidemark.reconciliation import ComparisonWithLive, HourComparison
from tidemark_cli.demo import _print_backfill


def _result(comparison: ComparisonWithLive | None) -> dict:
    return BackfillResult(
        stream="telemetry",
        start="2026-11-22T00:00:00Z",
        end="2026-11-22T02:00:00Z",
        partitions=(0, 1),
        shadow="demo",
        target="shadow:demo",
        ranges={"0": (0, 70), "1": (0, 50)},
        batches=3,
        records=118,
        late=1,
        quarantined=1,
        seconds=2.0,
        records_per_second=59,
        event_hours=(),
        inserted=None,
        commit_conflicts_retried=None,
        lost=(),
        comparison=comparison,
    ).to_json()


def test_a_backfill_compared_with_live_is_printed_with_each_differing_partition_hour(capsys):
    differing = HourComparison(
        partition=1,
        hour="2026-11-22T01:00:00Z",
        live=20,
        shadow=21,
        missing_in_live=1,
        extra_in_live=0,
        routed_differently=0,
    )
    _print_backfill(_result(ComparisonWithLive(4, 117, 118, (differing,), ())))

    assert capsys.readouterr().out.splitlines() == [
        "Backfilled [2026-11-22T00:00:00Z, 2026-11-22T02:00:00Z) into shadow:demo: 118 records, 1 late, 1 quarantined, "
        "3 batches, 59 records/s",
        "Compared with live: 4 partition-hours, 117 records in live, 118 in the backfill, 1 partition-hours differ",
        "  partition 1, hour 2026-11-22T01:00:00Z: live 20, backfill 21",
    ]


def test_a_backfill_not_compared_and_an_unreadable_result_say_so(capsys):
    _print_backfill(_result(None))
    _print_backfill({"outcome": "done", "records": "many"})

    out = capsys.readouterr().out.splitlines()
    assert out[1] == "Not compared with live (the request did not ask for it)"
    assert out[2].startswith("(the backfill task's result is not a backfill result tidemark can read (")
    assert "at `$.records`" in out[2]
