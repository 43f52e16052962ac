"""Settling the claims table (tidemark.claims_settlement): finished claims fold into settled
ranges, and no writer's decision changes — the live job leaves out the same offsets, and every
offset is routed under the same G, before and after."""

import random

from tidemark.claims_settlement import SETTLED_VERSION, settle, settled_claims
from tidemark.live_routing import RoutedRange
from tidemark.write_claims import ClaimedRange, covered_parts, earliest_claim_routing

G = 1_700_000_000_000
STREAM = "telemetry"


def claim(version, partition, start, end, g, mode="recovery", identity=None):
    return ClaimedRange(version, partition, start, end, g, f"tidemark:{STREAM}:{mode}:{identity or f'c{version}'}")


def after(claims, released):
    """The table's claims after settling: the settled ranges and the claims kept."""
    settlement = settle(claims, released)
    return settled_claims(settlement.settled, STREAM) + list(settlement.kept), settlement


def decisions(claims, bound):
    """What every writer decides from ``claims`` for offsets ``bound`` ({partition: (start, end)}):
    live's left-out offsets and the G each offset is routed under."""
    per_offset = {
        (r.partition, offset): r.global_watermark_ms
        for r in earliest_claim_routing(bound, claims)
        for offset in range(r.start, r.end)
    }
    return covered_parts(bound, ((c.partition, c.start, c.end) for c in claims)), per_offset


def test_released_claims_become_settled_ranges_and_adjacent_ones_of_one_g_merge():
    claims = [claim(1, 0, 0, 100, G), claim(2, 0, 100, 250, G), claim(3, 0, 250, 300, G + 5), claim(4, 1, 0, 10, None)]

    table, settlement = after(claims, {"c1", "c2", "c3", "c4"})

    assert settlement.settled == (
        RoutedRange(0, 0, 250, G),
        RoutedRange(0, 250, 300, G + 5),
        RoutedRange(1, 0, 10, -(2**63)),  # no G: stored as null again
    )
    assert settlement.kept == ()
    assert [c.global_watermark_ms for c in table] == [G, G + 5, None]
    assert {c.version for c in table} == {SETTLED_VERSION}
    assert decisions(table, {0: (0, 400), 1: (0, 20)}) == decisions(claims, {0: (0, 400), 1: (0, 20)})


def test_a_running_claim_stays_and_an_overlapping_released_one_keeps_the_running_ones_g():
    running = claim(3, 0, 50, 150, G)
    released = claim(5, 0, 100, 200, G + 10)

    table, settlement = after([running, released], {"c5"})

    assert settlement.kept == (running,)
    # [100, 150) was routed under the running claim's G (it is the earliest): settled so.
    assert settlement.settled == (RoutedRange(0, 100, 150, G), RoutedRange(0, 150, 200, G + 10))
    assert decisions(table, {0: (0, 300)}) == decisions([running, released], {0: (0, 300)})


def test_a_dead_claim_is_settled_once_released_claims_cover_all_its_offsets():
    dead = claim(2, 0, 0, 100, G)  # yielded: wrote nothing but its claim
    part = claim(4, 0, 0, 60, G + 1)

    table, settlement = after([dead, part], {"c4"})
    assert settlement.kept == (dead,)  # [60, 100) is not written yet

    rest = claim(6, 0, 60, 100, G + 2)
    table2, settlement2 = after([*table, rest], {"c6"})

    assert settlement2.kept == ()
    assert settlement2.settled == (RoutedRange(0, 0, 100, G),)  # every offset under the dead claim's G
    assert decisions(table2, {0: (0, 100)}) == decisions([dead, part, rest], {0: (0, 100)})


def test_re_drive_claims_are_kept_even_when_released():
    redrive = claim(3, 0, 5, 6, G, mode="redrive")

    _, settlement = after([redrive, claim(4, 0, 0, 10, G)], {"c3", "c4"})

    assert settlement.kept == (redrive,)
    assert settlement.settled == (RoutedRange(0, 0, 10, G),)


def test_settling_again_with_nothing_new_changes_nothing():
    table, _ = after([claim(1, 0, 0, 10, G), claim(2, 0, 20, 30, G)], {"c1", "c2"})

    again, settlement = after(table, set())

    assert not settlement.changes
    assert sorted(again) == sorted(table)


def test_a_thousand_recoveries_leave_a_small_table_and_the_same_decisions():
    rng = random.Random(40)
    claims, released, position = [], set(), {0: 0, 1: 0, 2: 0}
    for version in range(1, 1001):
        partition = rng.randrange(3)
        start = position[partition] - rng.choice([0, 0, 0, 5])  # some re-claim the end of the last
        end = position[partition] = position[partition] + rng.randrange(1, 50)
        claims.append(claim(version, partition, max(start, 0), end, G + 60_000 * (version // 25)))
        if rng.random() < 0.98:  # 2% die
            released.add(f"c{version}")
    bound = {p: (0, position[p] + 10) for p in position}

    table, settlement = after(claims, released)

    assert decisions(table, bound) == decisions(claims, bound)
    assert len(settlement.kept) < 25
    assert len(table) < 200  # a settled range per G and partition, give or take the dead ones
