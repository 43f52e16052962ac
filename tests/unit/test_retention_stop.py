"""The source's reason to stop, handed to the driver as a typed value."""

from __future__ import annotations

from spark_jobs.log_source.retention_stop import clear_lost_ranges, read_lost_ranges, write_lost_ranges
from tidemark.retention_loss import LostRange


def test_the_lost_ranges_come_back_exactly_and_are_forgotten_when_cleared(tmp_path):
    folder = str(tmp_path / "feedback")
    assert read_lost_ranges(folder) == ()
    lost = (LostRange(1, 40, 70), LostRange(3, 0, 5))
    write_lost_ranges(folder, lost)
    assert read_lost_ranges(folder) == lost
    clear_lost_ranges(folder)
    assert read_lost_ranges(folder) == ()
    clear_lost_ranges(folder)  # nothing to forget: no error
