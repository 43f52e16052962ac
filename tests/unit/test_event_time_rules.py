"""The single event-time rules: partition watermark, status, global watermark, lateness, sealing."""

from tidemark.global_watermark import GlobalWatermark
from tidemark.hour_sealer import HOUR_MS, HourSealer, hour_start_ms
from tidemark.lateness import Lateness, LatenessClassifier
from tidemark.partition_status import PartitionStatus, partition_status
from tidemark.partition_watermark import PartitionWatermark

ACTIVE, IDLE = PartitionStatus.ACTIVE, PartitionStatus.IDLE
T0 = 1_763_802_000_000  # 2025-11-22T09:00:00Z, on an hour boundary


def test_partition_watermark_is_max_minus_bound_minus_one_and_never_decreases():
    watermark = PartitionWatermark(max_out_of_orderness_ms=30_000)
    assert watermark.current_ms is None
    watermark.on_event(T0)
    assert watermark.current_ms == T0 - 30_001
    watermark.on_event(T0 - 60_000)  # an out-of-order record
    assert watermark.current_ms == T0 - 30_001
    watermark.on_watermark(T0 - 90_000)  # an older restored value
    assert watermark.current_ms == T0 - 30_001
    watermark.on_next_record_at_least(T0 + 60_000)
    assert watermark.current_ms == T0 + 29_999


def test_status_never_idle_while_the_partition_has_unread_records():
    quiet_for_a_day = T0 - 86_400_000
    assert partition_status(5, 10, quiet_for_a_day, T0, idle_timeout_ms=300_000) == ACTIVE
    assert partition_status(10, 10, T0 - 299_999, T0, idle_timeout_ms=300_000) == ACTIVE
    assert partition_status(10, 10, T0 - 300_000, T0, idle_timeout_ms=300_000) == IDLE


def test_global_watermark_is_min_over_active_and_never_decreases():
    g = GlobalWatermark()
    assert g.update({0: 100, 1: 50}, {0: ACTIVE, 1: ACTIVE}) == 50
    assert g.update({0: 100, 1: 50}, {0: ACTIVE, 1: IDLE}) == 100  # an idle partition does not hold G
    assert g.update({0: 100, 1: 50}, {0: ACTIVE, 1: ACTIVE}) == 100  # its return does not move G back
    assert g.update({0: 100, 1: 50}, {0: IDLE, 1: IDLE}) == 100  # every partition idle: G holds
    assert g.update({0: 300, 1: None}, {0: ACTIVE, 1: ACTIVE}) == 300  # never had a record: left out


def test_an_active_partition_with_unread_records_and_no_watermark_holds_g():
    g = GlobalWatermark(current_ms=100)
    # Partition 1 has records nobody has read: their event times are unknown, G holds.
    assert g.update({0: 300, 1: None}, {0: ACTIVE, 1: ACTIVE}, unread={1}) == 100
    # Nothing left to read and still no watermark (only invalid records): left out.
    assert g.update({0: 300, 1: None}, {0: ACTIVE, 1: ACTIVE}, unread=set()) == 300


def test_every_partition_idle_g_takes_the_final_watermarks_of_those_just_turned_idle_then_holds():
    g = GlobalWatermark(current_ms=100)
    # Partitions 0 and 1 caught up on old records in the last batch and are IDLE now: their final
    # W_p is known only now, and G takes the least of them.
    assert g.update({0: 500, 1: 400, 2: 900}, {0: IDLE, 1: IDLE, 2: IDLE}, just_read={0, 1}) == 400
    assert g.update({0: 500, 1: 400, 2: 900}, {0: IDLE, 1: IDLE, 2: IDLE}) == 400  # then holds
    # While a partition is ACTIVE, one just turned IDLE is left out as always.
    assert g.update({0: 700, 1: 600}, {0: ACTIVE, 1: IDLE}, just_read={1}) == 700


def test_global_watermark_restored_after_restart_holds_its_value():
    g = GlobalWatermark(current_ms=1_000)
    assert g.update({0: 10, 1: 20}, {0: ACTIVE, 1: ACTIVE}) == 1_000


def test_lateness_boundaries():
    classifier = LatenessClassifier(allowed_lateness_ms=600_000)
    g = T0
    assert classifier.classify(T0, g) == Lateness.ON_TIME
    assert classifier.classify(T0 - 1, g) == Lateness.WITHIN_LATENESS
    assert classifier.classify(T0 - 600_000, g) == Lateness.WITHIN_LATENESS
    assert classifier.classify(T0 - 600_001, g) == Lateness.LATE
    assert classifier.classify(0, None) == Lateness.ON_TIME
    assert classifier.late_before_ms(g) == T0 - 600_000


def test_hours_are_epoch_aligned_start_inclusive_end_exclusive():
    assert hour_start_ms(T0 - 1) == T0 - HOUR_MS  # 08:59:59.999 belongs to [08:00, 09:00)
    assert hour_start_ms(T0) == T0  # 09:00:00.000 does not
    assert hour_start_ms(-1) == -HOUR_MS


def test_hour_sealed_exactly_when_g_reaches_end_plus_allowed_lateness():
    sealer = HourSealer(allowed_lateness_ms=600_000)
    hour_8 = T0 - HOUR_MS
    assert not sealer.is_sealed(hour_8, T0 + 599_999)
    assert sealer.is_sealed(hour_8, T0 + 600_000)
    assert sealer.newly_sealed(T0 + 599_999, T0 + 600_000) == [hour_8]
    assert sealer.newly_sealed(T0 + 600_000, T0 + 600_001) == []
    assert sealer.newly_sealed(T0 + 600_000, T0 + 3 * HOUR_MS + 600_000) == [T0, T0 + HOUR_MS, T0 + 2 * HOUR_MS]
    assert sealer.newly_sealed(None, T0 + 600_000) == [hour_8]  # first G: no flood of empty hours
    assert sealer.newly_sealed(None, None) == []
