"""The claim rules (tidemark.write_claims): what a claimer writes into its claim, and the G every
writer routes a claimed offset under — the earliest claim's — whatever order they read in."""

import itertools

from tidemark.lateness import Lateness, LatenessClassifier
from tidemark.live_routing import LiveRouting, RoutedRange
from tidemark.write_claims import NO_WATERMARK_MS, ClaimedRange, claim_rows, covered_parts, earliest_claim_routing

G_LIVE = 1_700_000_000_000
G_OWN = G_LIVE + 600_000


def test_a_claim_keeps_the_g_live_routed_with_and_its_own_g_elsewhere():
    live = [RoutedRange(0, 100, 200, G_LIVE), RoutedRange(0, 200, 250, G_LIVE + 1), RoutedRange(1, 0, 10, G_LIVE)]

    rows = claim_rows({0: (50, 300), 2: (5, 9)}, live, G_OWN)

    assert rows == [
        (0, 50, 100, G_OWN),
        (0, 100, 200, G_LIVE),
        (0, 200, 250, G_LIVE + 1),
        (0, 250, 300, G_OWN),
        (2, 5, 9, G_OWN),
    ]


def test_a_claim_on_a_lake_live_never_wrote_has_no_g():
    assert claim_rows({0: (0, 10)}, [], None) == [(0, 0, 10, None)]


def test_every_offset_is_routed_under_the_earliest_claim_that_covers_it():
    first = ClaimedRange(4, 0, 100, 200, G_LIVE, "recovery:a")
    second = ClaimedRange(7, 0, 150, 300, G_OWN, "backfill:b")
    third = ClaimedRange(9, 0, 0, 500, None, "recovery:c")

    routing = earliest_claim_routing({0: (0, 400)}, [third, second, first])

    assert routing == (
        RoutedRange(0, 0, 100, NO_WATERMARK_MS),
        RoutedRange(0, 100, 200, G_LIVE),
        RoutedRange(0, 200, 300, G_OWN),
        RoutedRange(0, 300, 400, NO_WATERMARK_MS),
    )


def test_two_claimers_of_one_offset_route_it_to_the_same_table():
    """The property the no-duplicate argument rests on: whichever claimer reads the claims, the
    later one seeing both and the earlier one seeing only its own, a record gets one route."""
    lateness = LatenessClassifier(allowed_lateness_ms=60_000)
    early = ClaimedRange(3, 0, 0, 50, G_LIVE, "recovery:a")
    late = ClaimedRange(5, 0, 20, 80, G_OWN, "backfill:b")
    event_times = [G_LIVE - 120_000, G_OWN - 120_000, G_OWN]  # late under one G, on time under the other

    for offset, event_time in itertools.product(range(20, 50), event_times):
        as_early_sees = LiveRouting(earliest_claim_routing({0: (0, 50)}, [early])).global_watermark_at(0, offset)
        as_late_sees = LiveRouting(earliest_claim_routing({0: (20, 80)}, [early, late])).global_watermark_at(0, offset)
        assert as_early_sees == as_late_sees == G_LIVE
        assert lateness.classify(event_time, as_early_sees) is lateness.classify(event_time, as_late_sees)


def test_no_watermark_routes_every_record_on_time():
    assert LatenessClassifier(allowed_lateness_ms=0).classify(0, NO_WATERMARK_MS) is Lateness.ON_TIME


def test_covered_parts_are_clipped_to_the_ranges_and_merged():
    covering = [(0, 5, 15), (0, 12, 30), (0, 40, 50), (1, 0, 100), (2, 0, 1)]

    assert covered_parts({0: (10, 45), 1: (50, 60)}, covering) == {0: [(10, 30), (40, 45)], 1: [(50, 60)]}
    assert covered_parts({3: (0, 10)}, covering) == {}
