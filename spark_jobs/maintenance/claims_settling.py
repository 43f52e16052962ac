"""Settling the stream's claims table (tidemark.claims_settlement): released claims, and dead ones
whose offsets finished writers wrote, become settled ranges in one commit.

The commit is a Delta MERGE (spark_jobs.lake.claims_table.ClaimsTable.settle): a claim appended
meanwhile is neither matched nor lost, and a concurrent rewrite of the same files makes it retry,
then yield to the next run (spark_jobs.maintenance.conflict_retry). The table's rows before and
after, and its file count after, come from the table itself; the folded claims from the decision.
"""

from __future__ import annotations

import logging

from spark_jobs.maintenance.conflict_retry import retried
from tidemark.claims_settlement import SETTLED
from tidemark.maintenance_result import SettledClaims
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.maintenance")


def settle_claims(spark, stream: StreamConfig) -> SettledClaims:
    """Settle ``stream``'s claims table; what it did."""
    from spark_jobs.lake.claims_table import ClaimsTable
    from spark_jobs.lake.tables import LakeTables

    claims = ClaimsTable(spark, LakeTables(spark, stream))
    outcome, retries = retried(lambda: claims.settle(stream.name), "claims_settlement_conflict", {})
    if outcome is None:
        return SettledClaims(0, 0, 0, 0, 0, retries, yielded=True)
    settlement, rows_before = outcome
    rows_after, files = claims.census()
    settled = SettledClaims(
        claims_settled=len(settlement.folded - {SETTLED}),
        claims_kept=len({c.writer for c in settlement.kept}),
        settled_ranges=len(settlement.settled),
        rows_before=rows_before,
        rows_after=rows_after,
        retries=retries,
        files=files,
    )
    log.info({"event": "claims_settled", **settled.to_json()})
    return settled
