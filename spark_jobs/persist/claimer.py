"""What a recovery or a backfill into events does before it writes a record: claim its offsets,
then settle with the live job's batch in flight (tidemark.write_claims, steps 1 and 2).

The claim is committed first. Then the live job's checkpoint is read: a batch planned and not
committed that reads some of the claimed offsets may have decided how to write before the claim
existed. The claimer waits for it while the live driver beats, and yields when it does not
(tidemark.live_batch_wait has the rule): ``ClaimYielded`` carries what it saw to the job's result
file, and the job's operator has Airflow run it again later. Either way the outcome is decided
within a few beats of the driver's silence, not waited out.
"""

from __future__ import annotations

import logging
import time

from tidemark.live_batch_wait import LiveBatchWait, LiveBatchYield, Verdict
from tidemark.write_claims import covered_parts

log = logging.getLogger("tidemark.persist")

# How often the checkpoint and the beat are read again while waiting (seconds): on S3 each look
# is a few requests.
LOOK_EVERY_S = 0.5


class ClaimYielded(RuntimeError):
    """The claimer yielded to the live job's batch in flight (``yielded`` says which and why):
    it wrote nothing but its claim, and must run again later."""

    def __init__(self, yielded: LiveBatchYield, job: str):
        super().__init__(yielded.sentence(job))
        self.yielded = yielded


def claim_offsets(spark, stream, mode: str, ranges: dict[int, tuple[int, int]], tables, claims, live_routed):
    """Claim ``ranges`` ({partition: (start, end)}) for a run of ``mode`` ("recovery", "backfill")
    and settle with live's batch in flight; returns the claim (spark_jobs.lake.claims_table.Claim).
    ``live_routed``: live's ledger routing of the offsets (tidemark.live_routing.LiveRouting).
    Raises ClaimYielded when the batch cannot commit or does not commit in time."""
    from spark_jobs.persist.driver_beat import read_driver_beat
    from spark_jobs.streaming_checkpoint import in_flight_ranges, pending_batch

    ranges = {p: bound for p, bound in ranges.items() if bound[1] > bound[0]}
    claim = claims.claim(stream.name, mode, ranges, live_routed.ranges(), tables.last_live_global_watermark_ms())
    log.info(
        {
            "event": "offsets_claimed",
            "stream": stream.name,
            "mode": mode,
            "claims_version": claim.version,
            "ranges": {str(p): list(bound) for p, bound in sorted(ranges.items())},
        }
    )
    live_checkpoint = stream.checkpoint_path("persist")
    batch, in_flight = in_flight_ranges(spark, live_checkpoint)
    overlap = covered_parts(ranges, ((p, start, end) for p, (start, end) in in_flight.items()))
    if not overlap:
        return claim
    offsets = {str(p): tuple(spans) for p, spans in overlap.items()}
    log.info(
        {
            "event": "waiting_for_live_batch",
            "stream": stream.name,
            "mode": mode,
            "live_batch": batch,
            "offsets": {p: [list(span) for span in spans] for p, spans in offsets.items()},
        }
    )
    started = time.monotonic()
    wait = LiveBatchWait(batch, _now_ms())
    while True:
        decision = wait.decide(
            _now_ms(), pending_batch(spark, live_checkpoint), read_driver_beat(spark, live_checkpoint)
        )
        if decision.verdict is Verdict.PROCEED:
            log.info({"event": "live_batch_committed", "stream": stream.name, "mode": mode, "detail": decision.reason})
            return claim
        if decision.verdict is Verdict.YIELD:
            yielded = LiveBatchYield(
                batch, live_checkpoint, offsets, decision.reason, round(time.monotonic() - started, 1)
            )
            log.warning({"event": "yielded_to_live", "stream": stream.name, "mode": mode, "detail": decision.reason})
            raise ClaimYielded(yielded, mode)
        time.sleep(LOOK_EVERY_S)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)
