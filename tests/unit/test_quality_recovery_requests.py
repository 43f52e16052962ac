"""expectations.quality_verdicts.recovery_request: which stalls a recovery run replays."""

from expectations import stall
from expectations.check_family import Finding
from expectations.quality_result import PartitionQuality
from expectations.quality_status import QualityStatus
from expectations.quality_verdicts import recovery_request
from tidemark.offset_coverage import OffsetRange


def _stopped(position: int, log_end: int) -> PartitionQuality:
    return PartitionQuality(
        partition=2,
        status=QualityStatus.STOP,
        records=0,
        late=0,
        quarantined=0,
        position=position,
        log_earliest=0,
        log_end=log_end,
        lag=log_end - position,
        partition_watermark_ms=None,
        holes=(),
        hole_ranges=(),
        lost=(),
        failed_checks=("stall",),
        reason="STOP",
        reasons=("STOP",),
    )


def test_a_partition_stuck_while_the_job_runs_is_replayed_from_its_position_to_the_log_end():
    found = [Finding(2, stall.NAME, QualityStatus.STOP, "STOP: read position stuck at offset 100 for 40m")]
    request = recovery_request("telemetry", _stopped(100, 160), found)
    assert (request.partition, request.ranges) == (2, (OffsetRange(100, 160),))
    assert request.reason.startswith("STOP: read position stuck")


def test_a_silent_job_gets_no_replay_beside_it_running_the_job_is_the_cure():
    found = [Finding(2, stall.NAME, QualityStatus.STOP, "STOP: no ledger row for 40m", job_silent=True)]
    assert recovery_request("telemetry", _stopped(100, 160), found) is None


def test_holes_of_a_silent_job_are_still_replayed():
    found = [Finding(2, stall.NAME, QualityStatus.STOP, "STOP: no ledger row for 40m", job_silent=True)]
    quality = _stopped(100, 160)
    quality = PartitionQuality(**{**quality.__dict__, "holes": (OffsetRange(10, 20),)})
    assert recovery_request("telemetry", quality, found).ranges == (OffsetRange(10, 20),)


def test_a_partition_with_a_hole_and_a_stop_asks_to_restart_the_live_job():
    # The hole's sentence comes first in the reason, so a decision read from the reason's first
    # word ("STOP"/"STALL") missed this case; the request carries the decision as a field.
    found = [
        Finding(2, "completeness", QualityStatus.HOLE, "HOLE: 10 offsets missing", holes=(OffsetRange(10, 20),)),
        Finding(2, stall.NAME, QualityStatus.STOP, "STOP: read position stuck at offset 100 for 40m"),
    ]
    quality = PartitionQuality(**{**_stopped(100, 160).__dict__, "holes": (OffsetRange(10, 20),)})
    request = recovery_request("telemetry", quality, found)
    assert request.ranges == (OffsetRange(10, 20), OffsetRange(100, 160))
    assert request.reason.startswith("10 offsets missing")
    assert request.restart_live is True


def test_a_hole_alone_does_not_restart_the_live_job():
    found = [Finding(2, "completeness", QualityStatus.HOLE, "HOLE: 10 offsets missing", holes=(OffsetRange(10, 20),))]
    quality = PartitionQuality(
        **{**_stopped(100, 100).__dict__, "status": QualityStatus.HOLE, "holes": (OffsetRange(10, 20),)}
    )
    request = recovery_request("telemetry", quality, found)
    assert (request.ranges, request.restart_live) == ((OffsetRange(10, 20),), False)


def test_a_silent_job_with_holes_restarts_the_live_job():
    found = [Finding(2, stall.NAME, QualityStatus.STOP, "STOP: no ledger row for 40m", job_silent=True)]
    quality = PartitionQuality(**{**_stopped(100, 160).__dict__, "holes": (OffsetRange(10, 20),)})
    request = recovery_request("telemetry", quality, found)
    assert (request.ranges, request.restart_live) == ((OffsetRange(10, 20),), True)
