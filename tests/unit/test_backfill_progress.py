"""Backfill progress from positions, with the rate of this process only."""

from tidemark.backfill_progress import BackfillProgress


class ManualClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_counts_positions_and_extrapolates_the_time_left_from_this_process_rate():
    clock = ManualClock()
    progress = BackfillProgress({0: (100, 300), 1: (0, 200)}, clock)
    first = progress.batch_read({0: 150, 1: 50}, records=100)
    assert (first.offsets_done, first.offsets_total, first.records, first.seconds_left) == (100, 400, 100, None)
    clock.now += 10
    second = progress.batch_read({0: 250, 1: 150}, records=200)
    assert second.offsets_done == 300 and second.fraction == 0.75
    assert second.records_per_second == 20.0  # 200 records in the 10 s after the first batch
    assert second.seconds_left == 5.0  # 100 offsets left at 200 offsets per 10 s
    clock.now += 5
    last = progress.batch_read({0: 300, 1: 200}, records=100)
    assert last.partitions_done == 2 and last.seconds_left == 0.0
    assert last.to_json()["partitions_done"] == "2/2" and last.to_json()["percent"] == 100.0


def test_a_resumed_run_starts_where_its_predecessor_stopped_and_rates_only_its_own_reading():
    clock = ManualClock()
    progress = BackfillProgress({0: (0, 1000)}, clock)
    resumed = progress.batch_read({0: 800}, records=50)  # the predecessor read up to 750
    assert resumed.offsets_done == 800 and resumed.seconds_left is None
    clock.now += 4
    report = progress.batch_read({0: 900}, records=100)
    assert report.seconds_left == 4.0  # 100 left at 100 offsets per 4 s, not at 900 per 4 s


def test_a_report_read_back_from_its_json_is_the_report_with_whole_number_rate_and_time_left():
    from tidemark.backfill_progress import ProgressReport

    clock = ManualClock()
    progress = BackfillProgress({0: (0, 1000), 1: (0, 500)}, clock)
    progress.batch_read({0: 200, 1: 100}, records=300)
    clock.now += 10
    report = progress.batch_read({0: 1000, 1: 300}, records=1000)

    assert ProgressReport.from_json(report.to_json()) == ProgressReport(1300, 1500, 1300, 1, 2, 100.0, 2.0)


def test_sparse_positions_report_shards_finished_and_records_never_a_width_of_sequence_numbers():
    from tidemark.backfill_progress import BackfillProgress, ProgressReport

    first = 49590338271490256608559692538361571095921575989136588898
    ranges = {0: (first, first + 10**30), 1: (first * 3, first * 3 + 10**20)}
    clock = iter([0.0, 10.0]).__next__
    tracker = BackfillProgress(ranges, clock, dense=False)
    tracker.batch_read({0: first + 5, 1: first * 3 + 10**20}, 400)
    report = tracker.batch_read({0: first + 7}, 100)

    assert (report.offsets_done, report.offsets_total, report.seconds_left) == (None, None, None)
    assert (report.records, report.partitions_done, report.partitions, report.fraction) == (500, 1, 2, 0.5)
    assert report.records_per_second == 10.0
    assert ProgressReport.from_json(report.to_json()) == report
