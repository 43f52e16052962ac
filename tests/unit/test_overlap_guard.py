"""The live job's overlap guard: claimed offsets are left out (read again only when the claims
table has a new version), unclaimed ranges of older writers and a resumed zone make a batch
insert-only (the ledger read once)."""

from spark_jobs.lake.overlap_guard import OverlapGuard
from tidemark.write_claims import ClaimedRange

RECOVERY = "tidemark:telemetry:recovery:c1"


class FakeLedger:
    """What the guard asks of LakeTables, answered from a list; counts the reads."""

    def __init__(self, *ranges: tuple[int, int, int]):
        self.other_ranges = list(ranges)
        self.range_reads = 0

    def non_live_ranges(self) -> list[tuple[int, int, int]]:
        self.range_reads += 1
        return list(self.other_ranges)


class FakeClaims:
    """What the guard asks of ClaimsTable; counts the reads of the rows. Version 0 is the
    table's creation, as every job creates it before its first batch."""

    def __init__(self):
        self.claims: list[ClaimedRange] = []
        self.version = 0
        self.reads = 0

    def claim(self, partition: int, start: int, end: int) -> None:
        self.version += 1
        self.claims.append(ClaimedRange(self.version, partition, start, end, None, RECOVERY))

    def latest_version(self) -> int:
        return self.version

    def all_claims(self) -> list[ClaimedRange]:
        self.reads += 1
        return list(self.claims)


def test_claimed_offsets_are_left_out_exactly_and_other_partitions_are_untouched():
    claims = FakeClaims()
    claims.claim(1, 50, 90)
    claims.claim(1, 80, 120)
    guard = OverlapGuard(FakeLedger(), claims, ledger_created=True)

    assert guard.claimed({1: (40, 100), 0: (40, 100)}) == {1: [(50, 100)]}
    assert guard.claimed({1: (120, 130)}) == {}
    assert not guard.overlaps({1: (40, 100)}), "a claim is left out, not written insert-only"


def test_the_claims_are_read_again_only_when_the_table_has_a_new_version():
    claims = FakeClaims()
    guard = OverlapGuard(FakeLedger(), claims, ledger_created=True)
    assert guard.claimed({0: (0, 10)}) == {}
    assert claims.reads == 0, "only the table's creating commit (version 0): nothing to read"

    claims.claim(0, 55, 60)  # a recovery claims ahead of live
    for batch in range(5):
        assert guard.claimed({0: (50 + 10 * batch, 60 + 10 * batch)}) == ({0: [(55, 60)]} if batch == 0 else {})
    assert claims.reads == 1

    claims.claim(0, 75, 80)
    assert guard.claimed({0: (70, 90)}) == {0: [(75, 80)]}
    assert claims.reads == 2


def test_unclaimed_ranges_of_older_writers_make_a_batch_insert_only_and_are_read_once():
    ledger = FakeLedger((3, 100, 200))
    guard = OverlapGuard(ledger, FakeClaims())

    assert guard.overlaps({3: (150, 160)})
    for batch in range(5):
        assert not guard.overlaps({3: (200 + 10 * batch, 210 + 10 * batch)})
    assert ledger.range_reads == 1


def test_a_resumed_zone_overlaps_without_reading_the_ledger():
    ledger = FakeLedger()
    guard = OverlapGuard(ledger, FakeClaims(), resumed_zone={2: (10, 20)})

    assert guard.overlaps({2: (15, 30)})
    assert not guard.overlaps({})
    assert ledger.range_reads == 0


def test_before_its_ranges_are_known_a_batch_may_overlap_a_claim_a_zone_or_an_older_range():
    claims = FakeClaims()
    guard = OverlapGuard(FakeLedger(), claims, ledger_created=True)
    assert not guard.may_overlap_any(), "a lake no other writer touched: nothing to overlap"

    claims.claim(3, 100, 200)
    assert guard.may_overlap_any(), "a claim: a batch of unknown ranges may overlap it"

    assert OverlapGuard(FakeLedger(), FakeClaims(), resumed_zone={1: (40, 90)}).may_overlap_any(), "a resumed zone"
    assert OverlapGuard(FakeLedger((0, 1, 5)), FakeClaims()).may_overlap_any(), "an older writer's range"


def test_a_ledger_this_run_created_is_never_read():
    ledger = FakeLedger((0, 40, 60))
    guard = OverlapGuard(ledger, FakeClaims(), ledger_created=True)

    assert not guard.may_overlap_any() and not guard.overlaps({0: (50, 70)})
    assert ledger.range_reads == 0


def test_only_the_unclaimed_part_of_a_batch_can_make_it_insert_only():
    claims = FakeClaims()
    claims.claim(0, 100, 200)
    ledger = FakeLedger((0, 100, 200))  # the claimer's own ledger rows
    guard = OverlapGuard(ledger, claims)

    assert not guard.overlaps({0: (120, 180)}), "all of it claimed: left out, nothing to write insert-only"
    assert not guard.overlaps({0: (150, 260), 1: (0, 50)})
    ledger.other_ranges.append((0, 250, 300))  # (read once: a new guard sees it)
    assert OverlapGuard(ledger, claims).overlaps({0: (150, 260)}), (
        "the unclaimed [200, 260) meets another writer's range"
    )
