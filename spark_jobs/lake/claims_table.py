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


def claim_mode(writer: str) -> str:
    """The mode of a claim's writer, tidemark:<stream>:<mode>:<claim id>."""
    return writer.split(":")[2]


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
        routed_by: tuple[str, ...] | None = None,
        only: dict[int, list[tuple[int, int]]] | None = None,
    ) -> Claim:
        """Commit a claim of ``ranges`` ({partition: (start, end)}) for a run of ``mode``:
        offsets live already routed (``live_routed``) keep live's G, the others get
        ``own_global_watermark_ms``. Returns the claim with its routing, read back as of its own
        version (so claims made after it cannot change it): the earliest claim's G, among the
        claims of the modes ``routed_by`` (None: every claim). ``only``: the spans within
        ``ranges`` actually claimed ({partition: [(start, end), ...]}, each under
        ``own_global_watermark_ms``), when the run writes scattered offsets and must leave the
        ones between them to other writers' routing. The caller has ensured the tables."""
        claim_id = uuid.uuid4().hex
        writer = f"tidemark:{stream_name}:{mode}:{claim_id}"
        now = datetime.now(UTC)
        column = self._tables.positions.to_column
        rows = [
            # NO_WATERMARK_MS (live routed them before G existed) is stored as "no G": null.
            (stream_name, claim_id, writer, mode, p, column(start), column(end), _timestamp(_stored(g)), now)
            for p, start, end, g in (
                claim_rows(ranges, live_routed, own_global_watermark_ms)
                if only is None
                else [(p, s, e, own_global_watermark_ms) for p, spans in sorted(only.items()) for s, e in spans]
            )
        ]
        if not rows:
            return Claim(-1, writer, ())  # nothing to read: nothing to claim
        frame = self._spark.createDataFrame(rows, ddl(claims_columns(self._tables.positions))).coalesce(1)
        self._tables.append(frame, CLAIMS, claim_id)  # the claim id as the commit's user metadata
        versions = self._claim_versions()
        version = versions[claim_id]
        earlier = [
            c
            for c in self._claims(versions, as_of=version)
            if c.version <= version and (routed_by is None or claim_mode(c.writer) in routed_by)
        ]
        return Claim(version, writer, earliest_claim_routing(ranges, earlier))

    def latest_version(self) -> int:
        """The claims table's newest version: a look at its log with delta-rs, no Spark job (every
        live batch asks)."""
        return self._delta_rs().version()

    def all_claims(self) -> list[ClaimedRange]:
        """Every claim the table holds, oldest first."""
        return self._claims(self._claim_versions())

    def _delta_rs(self, version: int | None = None):
        """The claims table read with delta-rs: a small table, read whole without Spark (DESIGN.md,
        the Spark line), with the lake's storage settings (connectors.lake_storage)."""
        from connectors.lake_storage import open_delta_table

        return open_delta_table(self._tables.path(CLAIMS), version=version)

    def _claim_versions(self) -> dict[str, int]:
        """{claim id: version} of every claim commit (its user metadata) the history still holds."""
        versions: dict[str, int] = {}
        for commit in sorted(self._delta_rs().history(), key=lambda commit: commit["version"]):
            metadata = commit.get("userMetadata")
            if metadata:
                versions.setdefault(metadata, commit["version"])
        return versions

    def _claims(self, versions: dict[str, int], as_of: int | None = None) -> list[ClaimedRange]:
        import pyarrow as pa
        import pyarrow.compute as pc

        table = self._delta_rs(as_of).to_pyarrow_table(
            columns=[
                "claim_id",
                "writer",
                "source_partition",
                "start_offset",
                "end_offset",
                "global_watermark",
                "claimed_at",
            ]
        )
        columns = {name: table[name].to_pylist() for name in ("claim_id", "writer", "source_partition")}
        columns["start_offset"] = table["start_offset"].to_pylist()
        columns["end_offset"] = table["end_offset"].to_pylist()
        for name in ("global_watermark", "claimed_at"):  # microseconds since the epoch, UTC: as ms
            micros = pc.cast(table[name], pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_pylist()
            columns[name] = [None if us is None else us // 1000 for us in micros]
        rows = sorted(zip(*(columns[name] for name in columns)), key=lambda row: (row[6], row[0]))
        # A claim whose commit the log no longer retains (Delta keeps 30 days of history) is
        # older than every claim it does: ranked before them, among themselves by claim time.
        unretained = {claim_id: rank - len(rows) for rank, claim_id in enumerate(dict.fromkeys(row[0] for row in rows))}
        position = self._tables.positions.from_column
        claims = [
            ClaimedRange(
                versions.get(claim_id, unretained[claim_id]), partition, position(start), position(end), g, writer
            )
            for claim_id, writer, partition, start, end, g, _ in rows
        ]
        return sorted(claims)


def _stored(g: int | None) -> int | None:
    return None if g == NO_WATERMARK_MS else g


def _timestamp(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)
