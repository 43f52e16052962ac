"""The demo says which sealed hours were checked since it began, and by which run: the run a
seal's asset event started usually checks them before the demo's own quality run does."""

from tidemark.hour_report import HourReport
from tidemark_cli.checked_hours_line import checked_hours_line

HOUR_MS = 3_600_000
BEGAN_MS = 1_796_000_000_000


def _report(hour: int, run: str, checked_at_ms: int) -> HourReport:
    hour_ms = BEGAN_MS - BEGAN_MS % HOUR_MS + hour * HOUR_MS
    return HourReport(
        stream="telemetry",
        hour=f"hour{hour}",
        hour_ms=hour_ms,
        run_name=run,
        checked_at_ms=checked_at_ms,
        sealed_at_ms=None,
        success=True,
        partitions=(),
        summary_html="summary.html",
    )


def test_the_hours_checked_since_the_demo_began_are_named_with_the_run_that_checked_each():
    reports = [
        _report(-5, "scheduled__earlier.check", BEGAN_MS - 60_000),  # an earlier demo's: counted, not listed
        _report(1, "manual__demo.check", BEGAN_MS + 90_000),
        _report(-1, "asset_triggered__seal.check", BEGAN_MS + 30_000),
        _report(0, "asset_triggered__seal.check", BEGAN_MS + 30_000),
    ]

    assert checked_hours_line(reports, BEGAN_MS) == (
        "Hours checked since the demo began: hour-1, hour0 by asset_triggered__seal.check; hour1 by manual__demo.check."
        " Sealed hours checked so far: 4, the latest hour1."
    )


def test_no_hour_checked_since_the_demo_began_says_so_and_what_was_checked_before():
    assert checked_hours_line([_report(-5, "scheduled__earlier.check", BEGAN_MS - 1)], BEGAN_MS) == (
        "Hours checked since the demo began: none (no hour was sealed since). Sealed hours checked so far: 1, the latest hour-5."
    )
    assert checked_hours_line([], BEGAN_MS) == "Hours checked since the demo began: none (no hour was sealed since)."
