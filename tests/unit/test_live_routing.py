"""The G live routed each offset under, looked up by offset range."""

from tidemark.live_routing import LiveRouting, RoutedRange


def test_covering_clips_live_ranges_to_the_asked_range_in_offset_order():
    routing = LiveRouting(
        [
            RoutedRange(0, 200, 300, 2_000),
            RoutedRange(0, 0, 100, 1_000),
            RoutedRange(0, 100, 200, 1_500),
            RoutedRange(1, 0, 50, 9),
        ]
    )
    assert routing.covering(0, 150, 250) == [RoutedRange(0, 150, 200, 1_500), RoutedRange(0, 200, 250, 2_000)]
    assert routing.covering(0, 0, 100) == [RoutedRange(0, 0, 100, 1_000)]
    assert routing.covering(1, 40, 60) == [RoutedRange(1, 40, 50, 9)]
    assert len(routing) == 4


def test_offsets_live_never_covered_are_not_covered():
    routing = LiveRouting([RoutedRange(0, 0, 100, 1_000), RoutedRange(0, 150, 200, 1_200)])
    assert routing.covering(0, 100, 150) == []
    assert routing.covering(0, 90, 160) == [RoutedRange(0, 90, 100, 1_000), RoutedRange(0, 150, 160, 1_200)]
    assert routing.covering(0, 300, 400) == []
    assert routing.covering(2, 0, 10) == []


def test_a_range_repeated_by_a_replayed_batch_and_empty_ranges_count_once():
    routing = LiveRouting(
        [RoutedRange(0, 0, 100, 1_000), RoutedRange(0, 0, 100, 1_000), RoutedRange(0, 100, 100, 1_100)]
    )
    assert len(routing) == 1
