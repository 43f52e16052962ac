"""Stall status of a partition from recorded live ledger sequences (Burrow's rules as the anchor)."""

from __future__ import annotations

import pytest

from tidemark.stall_rules import LedgerObservation, StallRules, StallStatus, StallVerdict, partition_stall_status

START = 1_700_000_000_000
MINUTE = 60_000
TIMEOUT = 30 * MINUTE
MAX_LAG = 60 * MINUTE
RULES = StallRules(window=6, stall_timeout_ms=TIMEOUT, max_partition_lag_ms=MAX_LAG)


def _rows(table: str) -> list[LedgerObservation]:
    """Rows of 'minute position log_end W_p G' (W_p, G in minutes after START, '-' for none)."""
    rows = []
    for line in table.strip().splitlines():
        minute, position, log_end, w, g = line.split()
        rows.append(
            LedgerObservation(
                read_time_ms=START + int(minute) * MINUTE,
                position=int(position),
                log_end=int(log_end),
                partition_watermark_ms=None if w == "-" else START + int(w) * MINUTE,
                global_watermark_ms=None if g == "-" else START + int(g) * MINUTE,
            )
        )
    return rows


def _at(minute: int) -> int:
    return START + minute * MINUTE


# A partition whose reader froze at offset 500 at minute 10 while producers kept writing.
FROZEN = _rows(
    """
    0   400  420  0  0
    5   450  480  5  5
    10  500  540  10 10
    15  500  600  10 10
    20  500  660  10 10
    25  500  720  10 10
    30  500  780  10 10
    35  500  840  10 10
    40  500  900  10 10
    """
)


def test_lag_is_the_unread_offsets_and_never_negative():
    assert LedgerObservation(0, 100, 130, None, None).lag == 30
    assert LedgerObservation(0, 130, 120, None, None).lag == 0


def test_no_rows_yet_is_ok():
    assert partition_stall_status([], RULES, _at(0), current_log_end=1_000) == StallVerdict(
        StallStatus.OK, "no ledger rows yet", 0
    )


def test_a_frozen_partition_is_stall_before_the_stall_timeout_and_stop_after_it():
    # Minute 25: the position stood still since minute 10 but moved earlier in the window, and
    # the lag rose every row (20, 30, 40, 100, 160, 220): a slow reader as far as anyone can tell.
    assert partition_stall_status(FROZEN[:6], RULES, _at(25)).status == StallStatus.WARN
    # Minute 35: all six rows of the window (10..35) at 500 with offsets unread; 25 minutes < 30.
    assert partition_stall_status(FROZEN[:8], RULES, _at(35)) == StallVerdict(
        StallStatus.STALL, "read position constant at offset 500 across 6 rows (25m) with 340 offsets unread", 6
    )
    # Minute 40: 30 minutes since the first row at 500 (minute 10), the log end grew 540 -> 900.
    assert partition_stall_status(FROZEN, RULES, _at(40)) == StallVerdict(
        StallStatus.STOP,
        "read position stuck at offset 500 for 30m (stall timeout 30m) while the log end grew from 540 to 900",
        6,
    )
    # One minute more of stall timeout: still STALL at minute 40.
    longer = StallRules(window=6, stall_timeout_ms=TIMEOUT + MINUTE, max_partition_lag_ms=MAX_LAG)
    assert partition_stall_status(FROZEN, longer, _at(40)).status == StallStatus.STALL


def test_stop_sees_back_only_as_far_as_the_rows_it_is_given():
    # Given only the window's six rows (minutes 15..40), the freeze it can see lasts 25 minutes.
    assert partition_stall_status(FROZEN[-6:], RULES, _at(40)).status == StallStatus.STALL
    # A reader stuck on a backlog while producers are quiet: frozen, but the log end did not grow.
    quiet = [LedgerObservation(r.read_time_ms, r.position, 540, None, None) for r in FROZEN[2:]]
    assert partition_stall_status(quiet, RULES, _at(40)).status == StallStatus.STALL


def test_a_caught_up_idle_partition_is_ok_never_stall():
    # Position = log end throughout; G moves on with the other partitions far past W_p.
    idle = _rows(
        """
        0    700  700  0  50
        10   700  700  0  70
        20   700  700  0  90
        30   700  700  0  110
        40   700  700  0  130
        50   700  700  0  150
        """
    )
    verdict = partition_stall_status(idle, RULES, _at(55), current_log_end=700)
    assert verdict == StallVerdict(StallStatus.OK, "read up to offset 700 with a lag of 0 offsets", 6)
    # Long after its last row, with the log still at 700: nothing to read, nobody is stuck.
    assert partition_stall_status(idle, RULES, _at(500), current_log_end=700).status == StallStatus.OK
    assert partition_stall_status(idle, RULES, _at(500)).status == StallStatus.OK


def test_a_partition_that_reads_but_falls_behind_is_warn():
    slow = _rows(
        """
        0   100  150  0  0
        5   160  230  5  5
        10  220  310  10 10
        15  280  400  15 15
        """
    )
    verdict = partition_stall_status(slow, RULES, _at(16))
    assert verdict == StallVerdict(
        StallStatus.WARN,
        "lag grew in each of 4 rows, from 50 to 120 offsets, while the position moved from 100 to 280",
        4,
    )
    # One pair where the lag held (90 -> 90) is no longer "lag increasing" (strictly, as asked).
    held = slow[:2] + [
        LedgerObservation(_at(10), 220, 310, None, None),
        LedgerObservation(_at(15), 300, 390, None, None),
    ]
    assert partition_stall_status(held, RULES, _at(16)).status == StallStatus.OK
    # Two rows are not enough to call a trend.
    assert partition_stall_status(slow[:2], RULES, _at(6)).status == StallStatus.OK


def test_a_partition_watermark_far_behind_g_is_lagging():
    # Caught up in every row, but W_p keeps moving: its producer sends records an hour old.
    behind = _rows(
        """
        0   100  100  0  50
        5   120  120  1  58
        10  140  140  2  63
        """
    )
    verdict = partition_stall_status(behind, RULES, _at(11))
    assert verdict == StallVerdict(
        StallStatus.LAGGING, "partition watermark 61m behind the global watermark (max partition lag 1h)", 3
    )
    # Exactly max_partition_lag behind is still OK ("more than").
    at_limit = behind[:2] + [LedgerObservation(_at(10), 140, 140, START + 2 * MINUTE, START + 62 * MINUTE)]
    assert partition_stall_status(at_limit, RULES, _at(11)).status == StallStatus.OK
    # Unknown watermarks decide nothing.
    unknown = behind[:2] + [LedgerObservation(_at(10), 140, 140, None, START + 63 * MINUTE)]
    assert partition_stall_status(unknown, RULES, _at(11)).status == StallStatus.OK


def test_a_dead_job_is_stop_only_when_the_log_moved_past_its_position():
    last_rows = _rows(
        """
        0   100  100  0  0
        5   130  130  5  5
        10  160  160  10 10
        """
    )
    # 31 minutes without a row; producers wrote 40 more offsets meanwhile.
    dead = partition_stall_status(last_rows, RULES, _at(41), current_log_end=200)
    assert dead == StallVerdict(
        StallStatus.STOP,
        "no ledger row for 31m (stall timeout 30m) while the log reaches offset 200 beyond the read position 160: "
        "the job is not running",
        3,
        job_silent=True,
    )
    # Same silence, nothing written: an idle partition, not a dead job.
    assert partition_stall_status(last_rows, RULES, _at(41), current_log_end=160).status == StallStatus.OK
    # Not silent long enough yet.
    assert partition_stall_status(last_rows, RULES, _at(39), current_log_end=200).status == StallStatus.OK
    # Without current_log_end, the newest row's own unread offsets are the evidence.
    waiting = last_rows[:2] + [LedgerObservation(_at(10), 160, 175, None, None)]
    assert partition_stall_status(waiting, RULES, _at(40)).status == StallStatus.STOP
    assert partition_stall_status(last_rows, RULES, _at(40)).status == StallStatus.OK


def test_a_single_row_can_only_be_stop_or_lagging_or_ok():
    row = [LedgerObservation(_at(0), 10, 50, None, None)]
    assert partition_stall_status(row, RULES, _at(1)) == StallVerdict(
        StallStatus.OK, "read up to offset 10 with a lag of 40 offsets", 1
    )
    assert partition_stall_status(row, RULES, _at(30)).status == StallStatus.STOP


def test_unsorted_input_is_ordered_by_read_time():
    shuffled = [FROZEN[i] for i in (8, 2, 5, 0, 7, 3, 6, 1, 4)]
    assert partition_stall_status(shuffled, RULES, _at(40)) == partition_stall_status(FROZEN, RULES, _at(40))
    slow = _rows(
        """
        0   100  150  0  0
        5   160  230  5  5
        10  220  310  10 10
        """
    )
    assert partition_stall_status(list(reversed(slow)), RULES, _at(11)).status == StallStatus.WARN


def test_a_window_larger_than_the_history_evaluates_what_there_is():
    rules = StallRules(window=50, stall_timeout_ms=TIMEOUT, max_partition_lag_ms=MAX_LAG)
    verdict = partition_stall_status(FROZEN, rules, _at(40))
    assert verdict == StallVerdict(
        StallStatus.STOP,
        "read position stuck at offset 500 for 30m (stall timeout 30m) while the log end grew from 540 to 900",
        9,
    )


def test_only_the_newest_window_counts():
    # An old freeze that ended: the window of 3 sees the reader moving again.
    recovered = FROZEN[:6] + _rows(
        """
        30  700  720  30 30
        35  760  760  35 35
        40  800  800  40 40
        """
    )
    rules = StallRules(window=3, stall_timeout_ms=TIMEOUT, max_partition_lag_ms=MAX_LAG)
    assert partition_stall_status(recovered, rules, _at(41)) == StallVerdict(
        StallStatus.OK, "read up to offset 800 with a lag of 0 offsets", 3
    )


@pytest.mark.parametrize("window, timeout, max_lag", [(1, TIMEOUT, MAX_LAG), (6, 0, MAX_LAG), (6, TIMEOUT, -1)])
def test_rules_refuse_meaningless_thresholds(window, timeout, max_lag):
    with pytest.raises(ValueError):
        StallRules(window, timeout, max_lag)


def test_partitions_paused_by_alignment_behind_a_stalled_one_are_ok_and_the_stalled_one_is_stop():
    """Partition 2 froze (its W_p is G, it holds G); partitions 0 and 1 are ahead of G and wait at
    T = G + max_drift with unread data. Only partition 2 is the cause."""
    minute = 60_000
    rules = StallRules(window=6, stall_timeout_ms=5 * minute, max_partition_lag_ms=60 * minute)
    g = 1_000 * minute
    waiting = [LedgerObservation(t * minute, 500, 900 + t, g + 14 * minute, g) for t in range(10)]
    frozen = [LedgerObservation(t * minute, 0, 300 + t, g, g) for t in range(10)]
    assert partition_stall_status(waiting, rules, now_ms=10 * minute).status is StallStatus.OK
    assert "waiting" in partition_stall_status(waiting, rules, now_ms=10 * minute).reason
    assert partition_stall_status(frozen, rules, now_ms=10 * minute).status is StallStatus.STOP


def test_a_partition_stuck_while_the_job_ran_stays_a_partition_stop_once_the_job_is_silent_too():
    """An available_now job ends between runs, so at check time its rows are old: the rows it
    did write show the partition stuck, and that (replayable) STOP is what is reported."""
    minute = 60_000
    rules = StallRules(window=6, stall_timeout_ms=5 * minute, max_partition_lag_ms=60 * minute)
    frozen = [LedgerObservation(t * minute, 0, 300 + t, None, None) for t in range(10)]
    verdict = partition_stall_status(frozen, rules, now_ms=30 * minute, current_log_end=400)
    assert verdict.status is StallStatus.STOP
    assert verdict.job_silent is False
    assert verdict.reason.startswith("read position stuck at offset 0")


def test_a_frozen_shard_is_judged_by_order_and_named_in_sequence_numbers_without_a_count():
    from dataclasses import replace

    from tidemark.log_position import KINESIS_SEQUENCE_NUMBERS

    # The same freeze on a Kinesis shard: sparse 56-digit positions, ends the driver read ahead.
    base = 49590338271490256608559692538361571095921575989136588898
    shard = [replace(r, position=base + r.position * 10**20, log_end=base + r.log_end * 10**20) for r in FROZEN]

    stall = partition_stall_status(shard[:8], RULES, _at(35), positions=KINESIS_SEQUENCE_NUMBERS)
    stop = partition_stall_status(shard, RULES, _at(40), positions=KINESIS_SEQUENCE_NUMBERS)

    assert (stall.status, stop.status) == (StallStatus.STALL, StallStatus.STOP)
    assert f"sequence number {base + 500 * 10**20}" in stall.reason and "records unread" in stall.reason
    assert "offset" not in stall.reason + stop.reason
    # "The lag grew" needs counts: a growing gap of sequence numbers is not one.
    growing = partition_stall_status(shard[:6], RULES, _at(25), positions=KINESIS_SEQUENCE_NUMBERS)
    assert growing.status == StallStatus.OK and growing.reason.endswith("records unread")
