"""The source's reason to stop, handed to the driver as a typed value."""

from __future__ import annotations

from spark_jobs.log_source.retention_stop import clear_lost_offsets, read_lost_offsets, write_lost_offsets
from tidemark.retention_loss import LostOffsets


def test_the_lost_ranges_come_back_exactly_and_are_forgotten_when_cleared(tmp_path):
    folder = str(tmp_path / "feedback")
    assert read_lost_offsets(folder) == ()
    lost = (LostOffsets(1, 40, 70), LostOffsets(3, 0, 5))
    write_lost_offsets(folder, lost)
    assert read_lost_offsets(folder) == lost
    clear_lost_offsets(folder)
    assert read_lost_offsets(folder) == ()
    clear_lost_offsets(folder)  # nothing to forget: no error
