"""The live job's overlap guard reads the other writers' ledger ranges only when they may have
changed: once, then again after a commit that is not the live job's own."""

from spark_jobs.overlap_guard import HISTORY_WINDOW, OverlapGuard

LIVE = "tidemark:telemetry:live:q1"
RECOVERY = "tidemark:telemetry:recovery:q2"


class FakeLedger:
    """The two questions the guard asks of LakeTables, answered from lists; counts the reads."""

    def __init__(self):
        self.commits: list[tuple[int, str | None]] = []  # oldest first
        self.other_ranges: list[tuple[int, int, int]] = []
        self.range_reads = 0

    def commit(self, writer: str | None, *ranges: tuple[int, int, int]) -> None:
        self.commits.append((len(self.commits), writer))
        self.other_ranges += ranges

    def recent_commits(self, table: str, limit: int) -> list[tuple[int, str | None]]:
        assert table == "ledger"
        return sorted(self.commits, reverse=True)[:limit]

    def non_live_ranges(self) -> list[tuple[int, int, int]]:
        self.range_reads += 1
        return list(self.other_ranges)


def test_the_other_writers_ranges_are_read_once_while_only_live_commits():
    ledger = FakeLedger()
    ledger.commit(RECOVERY, (3, 100, 200))
    guard = OverlapGuard(ledger)

    assert guard.overlaps({3: (150, 160)}, LIVE)
    for batch in range(5):
        assert not guard.overlaps({3: (200 + 10 * batch, 210 + 10 * batch)}, LIVE)
        ledger.commit(LIVE)

    assert ledger.range_reads == 1


def test_a_commit_by_another_writer_is_seen_by_the_next_batch():
    ledger = FakeLedger()
    guard = OverlapGuard(ledger)
    assert not guard.overlaps({1: (0, 50)}, LIVE)
    ledger.commit(LIVE)

    ledger.commit(RECOVERY, (1, 50, 90))  # recovery read ahead of live on partition 1

    assert guard.overlaps({1: (50, 60)}, LIVE)
    assert not guard.overlaps({0: (50, 60)}, LIVE), "another partition is not touched"
    assert ledger.range_reads == 2


def test_more_commits_than_the_window_since_the_last_batch_read_the_ranges_again():
    ledger = FakeLedger()
    guard = OverlapGuard(ledger)
    guard.overlaps({0: (0, 1)}, LIVE)
    for _ in range(HISTORY_WINDOW + 1):
        ledger.commit(LIVE)  # all live's own, but the window cannot show that they are

    guard.overlaps({0: (1, 2)}, LIVE)

    assert ledger.range_reads == 2


def test_commits_without_a_writer_count_as_another_writer():
    ledger = FakeLedger()
    guard = OverlapGuard(ledger)
    guard.overlaps({0: (0, 1)}, LIVE)

    ledger.commit(None, (0, 1, 5))  # a ledger written before commits named their writer

    assert guard.overlaps({0: (1, 2)}, LIVE)


def test_a_resumed_zone_overlaps_without_reading_the_ledger():
    ledger = FakeLedger()
    guard = OverlapGuard(ledger, resumed_zone={2: (10, 20)})

    assert guard.overlaps({2: (15, 30)}, LIVE)
    assert not guard.overlaps({}, LIVE)
    assert ledger.range_reads == 0


def test_before_its_ranges_are_known_a_batch_may_overlap_whatever_another_writer_wrote():
    ledger = FakeLedger()
    guard = OverlapGuard(ledger)
    assert not guard.may_overlap_any(LIVE), "a lake no other writer touched: nothing to overlap"

    ledger.commit(RECOVERY, (3, 100, 200))
    assert guard.may_overlap_any(LIVE), "a recovery's range: a batch of unknown ranges may overlap it"

    assert OverlapGuard(FakeLedger(), resumed_zone={1: (40, 90)}).may_overlap_any(LIVE), "a resumed zone"


def test_a_ledger_this_run_created_is_not_read_until_another_writer_commits():
    ledger = FakeLedger()
    ledger.commit(None)  # commit 0: the run created the table
    guard = OverlapGuard(ledger, ledger_created=True)

    assert not guard.may_overlap_any(LIVE) and not guard.overlaps({0: (0, 50)}, LIVE)
    assert ledger.range_reads == 0, "nothing to read in a ledger created a moment ago"

    ledger.commit(RECOVERY, (0, 40, 60))  # a recovery started right after
    assert guard.overlaps({0: (50, 70)}, LIVE) and ledger.range_reads == 1
