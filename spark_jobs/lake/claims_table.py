"""The stream's ``claims`` table: claims made, released and settled, claims read (the rules:
tidemark.write_claims, tidemark.claims_settlement).

Claims are few (a commit per recovery or backfill run, and one more when it finishes) and read
by every live batch, so the live side asks the table's newest version first and reads the rows
only when it moved. A claim's order is its commit's version, found in the table's history by the
claim id the commit carries as its user metadata, until the maintenance job settles the table and
writes it into the row (``claim_version``): then only the claims made since are looked up, in the
newest commits. The table exists before any job of the stream can meet it: every job creates the
stream's tables, this one among them, before its first look at any (LakeTables.ensure).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from tidemark.claims_settlement import (
    RELEASED,
    SETTLED,
    SETTLED_VERSION,
    Settlement,
    claim_id,
    settle,
    settled_claims,
    writer_mode,
)
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

    @property
    def claim_id(self) -> str:
        return claim_id(self.writer)


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
        identity = uuid.uuid4().hex
        writer = f"tidemark:{stream_name}:{mode}:{identity}"
        now = datetime.now(UTC)
        column = self._tables.positions.to_column
        rows = [
            # NO_WATERMARK_MS (live routed them before G existed) is stored as "no G": null.
            (stream_name, identity, writer, mode, p, column(start), column(end), _timestamp(_stored(g)), now, None)
            for p, start, end, g in (
                claim_rows(ranges, live_routed, own_global_watermark_ms)
                if only is None
                else [(p, s, e, own_global_watermark_ms) for p, spans in sorted(only.items()) for s, e in spans]
            )
        ]
        if not rows:
            return Claim(-1, writer, ())  # nothing to read: nothing to claim
        frame = self._spark.createDataFrame(rows, ddl(claims_columns(self._tables.positions))).coalesce(1)
        self._tables.append(frame, CLAIMS, identity)  # the claim id as the commit's user metadata
        version = self._commit_versions({identity})[identity]
        earlier = [
            c
            for c in self._read(as_of=version)[0]
            if c.version <= version and (routed_by is None or writer_mode(c.writer) in routed_by)
        ]
        return Claim(version, writer, earliest_claim_routing(ranges, earlier))

    def release(self, claim: Claim) -> None:
        """Release ``claim``: its writer finished, every offset it claimed is written. One row
        (mode ``released``), appended after the writer's last commit; the claim keeps its effect
        until the maintenance job settles it (tidemark.claims_settlement)."""
        if claim.version < 0:
            return  # nothing was claimed
        row = (
            claim.writer.split(":")[1],
            claim.claim_id,
            claim.writer,
            RELEASED,
            None,
            None,
            None,
            None,
            datetime.now(UTC),
            None,
        )
        frame = self._spark.createDataFrame([row], ddl(claims_columns(self._tables.positions)))
        self._tables.append(frame, CLAIMS, f"{RELEASED}:{claim.claim_id}")

    def settle(self, stream_name: str) -> tuple[Settlement, int]:
        """Settle the table (tidemark.claims_settlement) in one commit: the folded claims' rows,
        their release rows and the former settled ranges go, the settled ranges come, and the
        claims kept get their version written. Returns what was decided and the rows the table
        held before. A Delta MERGE: claims appended meanwhile are untouched (a blind append does
        not conflict with it, and is not among its matches); a concurrent settlement or
        rewrite of the same files fails it (the caller retries)."""
        from delta.tables import DeltaTable

        version = self.latest_version()
        claims, released = self._read(as_of=version)
        settlement = settle(claims, released)
        rows = len(claims) + len(released)
        if not settlement.changes:
            return settlement, rows
        column = self._tables.positions.to_column
        now = datetime.now(UTC)
        source = (
            [(identity, "delete", None, None, None, None, None, None) for identity in sorted(settlement.folded)]
            + [
                (claim_id(c.writer), "version", c.version, None, None, None, None, None)
                for c in {claim_id(c.writer): c for c in settlement.kept}.values()
            ]
            + [
                (
                    SETTLED,
                    "insert",
                    SETTLED_VERSION,
                    c.writer,
                    c.partition,
                    column(c.start),
                    column(c.end),
                    _timestamp(c.global_watermark_ms),
                )
                for c in settled_claims(settlement.settled, stream_name)
            ]
        )
        position = self._tables.positions.sql_type
        frame = self._spark.createDataFrame(
            source,
            f"claim_id STRING, action STRING, claim_version BIGINT, writer STRING, source_partition INT, "
            f"start_offset {position}, end_offset {position}, global_watermark TIMESTAMP",
        )
        target = DeltaTable.forPath(self._spark, self._tables.path(CLAIMS)).alias("t")
        (
            target.merge(frame.alias("s"), "t.claim_id = s.claim_id AND s.action IN ('delete', 'version')")
            .whenMatchedDelete(condition="s.action = 'delete'")
            .whenMatchedUpdate(condition="s.action = 'version'", set={"claim_version": "s.claim_version"})
            .whenNotMatchedInsert(
                condition="s.action = 'insert'",
                values={
                    "stream": f"'{stream_name}'",
                    "claim_id": "s.claim_id",
                    "writer": "s.writer",
                    "mode": f"'{SETTLED}'",
                    "source_partition": "s.source_partition",
                    "start_offset": "s.start_offset",
                    "end_offset": "s.end_offset",
                    "global_watermark": "s.global_watermark",
                    "claimed_at": f"timestamp_millis({int(now.timestamp() * 1000)})",
                    "claim_version": "s.claim_version",
                },
            )
            .execute()
        )
        return settlement, rows

    def census(self) -> tuple[int, int]:
        """The table's rows (claims, release rows, settled ranges) and data files now."""
        table = self._delta_rs()
        return table.to_pyarrow_table(columns=["claim_id"]).num_rows, len(table.file_uris())

    def latest_version(self) -> int:
        """The claims table's newest version: a look at its log with delta-rs, no Spark job (every
        live batch asks)."""
        return self._delta_rs().version()

    def all_claims(self) -> list[ClaimedRange]:
        """Every claim and settled range the table holds, oldest first."""
        return self._read()[0]

    def _delta_rs(self, version: int | None = None):
        """The claims table read with delta-rs: a small table, read whole without Spark (DESIGN.md,
        the Spark line), with the lake's storage settings (connectors.lake_storage)."""
        from connectors.lake_storage import open_delta_table

        return open_delta_table(self._tables.path(CLAIMS), version=version)

    def _commit_versions(self, claim_ids: set[str]) -> dict[str, int]:
        """{claim id: version} of the commits that made the claims ``claim_ids`` (their user
        metadata), those the history still holds. Reads the newest commits first, and further
        back only while some are not found: after a settlement only the claims made since are
        asked for, and they are among the newest."""
        if not claim_ids:
            return {}
        table = self._delta_rs()
        limit = 64
        while True:
            commits = table.history(limit)
            versions: dict[str, int] = {}
            for commit in commits:
                metadata = commit.get("userMetadata")
                if metadata in claim_ids:
                    versions[metadata] = min(versions.get(metadata, commit["version"]), commit["version"])
            if len(versions) == len(claim_ids) or len(commits) < limit:
                return versions
            limit *= 4

    def _read(self, as_of: int | None = None) -> tuple[list[ClaimedRange], set[str]]:
        """The claims and settled ranges of the table (as of version ``as_of``), oldest first,
        and the ids of the claims released."""
        import pyarrow as pa
        import pyarrow.compute as pc

        names = ["claim_id", "writer", "mode", "source_partition", "start_offset", "end_offset"]
        table = self._delta_rs(as_of).to_pyarrow_table(
            columns=[*names, "global_watermark", "claimed_at", "claim_version"]
        )
        columns = {name: table[name].to_pylist() for name in (*names, "claim_version")}
        for name in ("global_watermark", "claimed_at"):  # microseconds since the epoch, UTC: as ms
            micros = pc.cast(table[name], pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_pylist()
            columns[name] = [None if us is None else us // 1000 for us in micros]
        rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
        released = {row["claim_id"] for row in rows if row["mode"] == RELEASED}
        rows = sorted(
            (row for row in rows if row["mode"] != RELEASED), key=lambda row: (row["claimed_at"], row["claim_id"])
        )
        versions = self._commit_versions({row["claim_id"] for row in rows if row["claim_version"] is None})
        # A claim whose commit the log no longer retains (Delta keeps 30 days of history) and whose
        # version no settlement wrote is older than every claim it does: ranked before them,
        # among themselves by claim time (settled ranges rank before all).
        unretained = {
            identity: rank - len(rows) for rank, identity in enumerate(dict.fromkeys(r["claim_id"] for r in rows))
        }
        position = self._tables.positions.from_column
        claims = [
            ClaimedRange(
                row["claim_version"]
                if row["claim_version"] is not None
                else versions.get(row["claim_id"], unretained[row["claim_id"]]),
                row["source_partition"],
                position(row["start_offset"]),
                position(row["end_offset"]),
                row["global_watermark"],
                row["writer"],
            )
            for row in rows
        ]
        return sorted(claims), released


def _stored(g: int | None) -> int | None:
    return None if g == NO_WATERMARK_MS else g


def _timestamp(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)
