"""The demo's backlog starts after the stream's global watermark: a second demo sends nothing to late."""

from __future__ import annotations

from tidemark_cli.demo_backlog import HOUR_MS, MINUTE_MS, demo_backlog

NOW = 1_795_399_980_000 + 12_345  # 12.345 s past a whole minute


def test_a_first_demo_covers_the_hours_before_now_on_whole_minutes():
    backlog = demo_backlog(NOW, 3, None)
    end = NOW - 12_345 - (NOW - 12_345) % MINUTE_MS
    assert (backlog.start_ms, backlog.end_ms, backlog.note) == (end - 3 * HOUR_MS, end, None)
    assert backlog.hours == 3


def test_a_global_watermark_before_the_window_changes_nothing():
    assert demo_backlog(NOW, 3, NOW - 5 * HOUR_MS) == demo_backlog(NOW, 3, None)


def test_a_second_demo_starts_on_the_minute_after_the_global_watermark():
    end = NOW - 12_345
    g = end - 40 * MINUTE_MS + 5_000  # 5 s into the minute 40 minutes before the window's end
    backlog = demo_backlog(NOW, 3, g)
    assert (backlog.start_ms, backlog.end_ms) == (end - 39 * MINUTE_MS, end)
    assert "global watermark is already at" in backlog.note and "none of its records is late" in backlog.note


def test_nothing_is_left_when_the_global_watermark_is_within_the_last_minute():
    assert demo_backlog(NOW, 3, NOW - 30_000) is None
