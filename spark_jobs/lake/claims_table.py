"""The stream's ``claims`` table: claims made, claims read (the rules: tidemark.write_claims).

Claims are few (one commit per recovery or backfill run) and read by every live batch, so the
live side asks the table's newest version first and reads the rows only when it moved. A
claim's order is its commit's version, found in the table's history by the claim id the commit
carries as its user metadata. The table exists before any job of the stream can meet it: every
job creates the stream's tables, this one among them, before its first look at any
(LakeTables.ensure).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from tidemark.live_routing import RoutedRange
from tidemark.table_schemas import claims_columns, ddl
from tidemark.write_claims import NO_WATERMARK_MS, ClaimedRange, claim_rows, earliest_claim_routing

CLAIMS = "claims"


@dataclass(frozen=True)
class Claim:
    """A claim made by this run: its commit ``version`` (-1: nothing claimed) and the routing of
    every claimed offset (the earliest claim's G, see tidemark.write_claims.earliest_claim_routing)."""

    version: int
    writer: str
    routing: tuple[RoutedRange, ...]


class ClaimsTable:
    def __init__(self, spark, tables):
        """``tables``: spark_jobs.lake.tables.LakeTables of the stream (not a shadow set)."""
        self._spark = spark
        self._tables = tables

    def claim(
        self,
        stream_name: str,
        mode: str,
        ranges: dict[int, tuple[int, int]],
        live_routed: tuple[RoutedRange, ...],
        own_global_watermark_ms: int | None,
    ) -> Claim:
        """Commit a claim of ``ranges`` ({partition: (start, end)}) for a run of ``mode``:
        offsets live already routed (``live_routed``) keep live's G, the others get
        ``own_global_watermark_ms``. Returns the claim with its routing, read back as of its own
        version (so claims made after it cannot change it). The caller has ensured the tables."""
        claim_id = uuid.uuid4().hex
        writer = f"tidemark:{stream_name}:{mode}:{claim_id}"
        now = datetime.now(UTC)
        column = self._tables.positions.to_column
        rows = [
            # NO_WATERMARK_MS (live routed them before G existed) is stored as "no G": null.
            (stream_name, claim_id, writer, mode, p, column(start), column(end), _timestamp(_stored(g)), now)
            for p, start, end, g in claim_rows(ranges, live_routed, own_global_watermark_ms)
        ]
        if not rows:
            return Claim(-1, writer, ())  # nothing to read: nothing to claim
        frame = self._spark.createDataFrame(rows, ddl(claims_columns(self._tables.positions))).coalesce(1)
        self._tables.append(frame, CLAIMS, claim_id)  # the claim id as the commit's user metadata
        versions = self._claim_versions()
        version = versions[claim_id]
        earlier = [c for c in self._claims(versions, as_of=version) if c.version <= version]
        return Claim(version, writer, earliest_claim_routing(ranges, earlier))

    def latest_version(self) -> int:
        """The claims table's newest version (a look at its log, not its rows)."""
        return self._tables.recent_commits(CLAIMS, 1)[0][0]

    def all_claims(self) -> list[ClaimedRange]:
        """Every claim the table holds, oldest first."""
        return self._claims(self._claim_versions())

    def _claim_versions(self) -> dict[str, int]:
        """{claim id: version} of every claim commit (its user metadata) the history still holds."""
        from delta.tables import DeltaTable

        rows = (
            DeltaTable.forPath(self._spark, self._tables.path(CLAIMS))
            .history()
            .select("version", "userMetadata")
            .collect()
        )
        versions: dict[str, int] = {}
        for row in sorted(rows, key=lambda r: r.version):
            if row.userMetadata:
                versions.setdefault(row.userMetadata, row.version)
        return versions

    def _claims(self, versions: dict[str, int], as_of: int | None = None) -> list[ClaimedRange]:
        from pyspark.sql import functions as F

        reader = self._spark.read.format("delta")
        if as_of is not None:
            reader = reader.option("versionAsOf", as_of)
        rows = (
            reader.load(self._tables.path(CLAIMS))
            .select(
                "claim_id",
                "writer",
                "source_partition",
                "start_offset",
                "end_offset",
                F.unix_millis("global_watermark").alias("g"),
                F.unix_millis("claimed_at").alias("claimed_at"),
            )
            .orderBy("claimed_at", "claim_id")
            .collect()
        )
        # A claim whose commit the log no longer retains (Delta keeps 30 days of history) is
        # older than every claim it does: ranked before them, among themselves by claim time.
        unretained = {
            claim_id: rank - len(rows) for rank, claim_id in enumerate(dict.fromkeys(r.claim_id for r in rows))
        }
        position = self._tables.positions.from_column
        claims = [
            ClaimedRange(
                versions.get(r.claim_id, unretained[r.claim_id]),
                r.source_partition,
                position(r.start_offset),
                position(r.end_offset),
                r.g,
                r.writer,
            )
            for r in rows
        ]
        return sorted(claims)


def _stored(g: int | None) -> int | None:
    return None if g == NO_WATERMARK_MS else g


def _timestamp(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)
