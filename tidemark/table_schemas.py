"""The columns of a stream's lake tables, as (name, Spark SQL type) pairs.

Kept in the core (plain strings, no Spark import) so the schemas are one reviewed definition that
the Spark writer, the checks and the tests all read. Times are TIMESTAMP in UTC.

Positions (``source_offset``, ``start_offset``, ``end_offset``, ``log_end_offset``) have the
stream's position type (tidemark.log_position): BIGINT Kafka offsets, or a Kinesis stream's
sequence numbers as fixed-width text that orders as the numbers do. The names stay: a Kafka
lake written before Kinesis existed keeps its columns and rows unchanged. The constants are a
Kafka stream's columns; the functions take the position type.
"""

from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.planned_range import HEADERS_SQL_TYPE
from tidemark.stream_config import PayloadSchema

_PAYLOAD_SQL_TYPES = {"string": "STRING", "double": "DOUBLE", "long": "BIGINT", "int": "INT", "boolean": "BOOLEAN"}


def _record_identity(positions: PositionType) -> list[tuple[str, str]]:
    """Identity of a record in the log: unique per stream, the key of exactly-once."""
    return [("source_partition", "INT"), ("source_offset", positions.sql_type), ("log_timestamp", "TIMESTAMP")]


EVENTS_PARTITIONING = ("event_date", "event_hour")


def events_columns(payload: PayloadSchema, positions: PositionType = KAFKA_OFFSETS) -> list[tuple[str, str]]:
    """One row per persisted record; partitioned by event_date, event_hour (UTC)."""
    return (
        _record_identity(positions)
        + [("event_time", "TIMESTAMP"), ("record_key", "BINARY"), ("record_headers", HEADERS_SQL_TYPE)]
        + [(field.name, _PAYLOAD_SQL_TYPES[field.type]) for field in payload.columns]
        + [("step_id", "BIGINT"), ("event_date", "DATE"), ("event_hour", "INT")]
    )


def late_columns(payload: PayloadSchema, positions: PositionType = KAFKA_OFFSETS) -> list[tuple[str, str]]:
    """A record that arrived behind G − allowed lateness: the events row plus the G it met."""
    return events_columns(payload, positions) + [("global_watermark", "TIMESTAMP")]


SEALS_COLUMNS = [
    ("stream", "STRING"),
    ("hour", "TIMESTAMP"),  # start of the sealed hour [hour, hour + 1h), UTC
    ("sealed_at", "TIMESTAMP"),  # the read time of the batch that sealed it
    ("global_watermark", "TIMESTAMP"),  # G that sealed it: G >= hour + 1h + allowed lateness
    ("micro_batch_id", "BIGINT"),  # Spark's micro-batch that sealed it (its streaming checkpoint's)
]


def quarantine_columns(positions: PositionType = KAFKA_OFFSETS) -> list[tuple[str, str]]:
    return _record_identity(positions) + _QUARANTINE_DETAIL


_QUARANTINE_DETAIL = [
    ("record_key", "BINARY"),
    # Kafka's record headers (trace ids, producer names, schema ids); null on Kinesis, which has none.
    ("record_headers", HEADERS_SQL_TYPE),
    ("raw_value", "BINARY"),  # the bytes exactly as read, so the record can be repaired and replayed
    ("reason", "STRING"),  # a tidemark.record_decoder.RejectReason code
    ("detail", "STRING"),
    ("step_id", "BIGINT"),
    ("read_time", "TIMESTAMP"),
]

QUARANTINE_COLUMNS = quarantine_columns()

LEDGER_COLUMNS = [
    ("stream", "STRING"),
    # The aligned step: one step of the planner, with its own G. A Spark micro-batch packs
    # consecutive steps up to the row budget (tidemark.batch_planner.plan_batch): it writes a row
    # per step a partition read in, and one per partition for its last step.
    ("step_id", "BIGINT"),
    ("source_partition", "INT"),
    ("mode", "STRING"),  # live | backfill | recovery
    ("start_offset", "BIGINT"),  # first offset of the range read (inclusive)
    ("end_offset", "BIGINT"),  # end of the range read (exclusive); the next range starts here
    ("log_end_offset", "BIGINT"),  # the log's readable end (Kafka: last stable offset) when planned
    ("records", "BIGINT"),  # records persisted to events
    ("quarantined", "BIGINT"),
    ("late", "BIGINT"),
    # Data records the range held: records + late + quarantined. Offsets are not records:
    # transaction markers, aborted transactions and compacted offsets hold an offset each but no
    # data, so end_offset - start_offset - data_records offsets of the range held none.
    ("data_records", "BIGINT"),
    ("min_event_time", "TIMESTAMP"),
    ("max_event_time", "TIMESTAMP"),
    ("partition_watermark", "TIMESTAMP"),  # W_p after the batch
    # G the batch was routed and sealed under (null in rows written before tidemark kept it).
    ("global_watermark", "TIMESTAMP"),
    ("partition_status", "STRING"),
    ("slicing", "STRING"),  # how the range was planned: record_count | event_time
    ("read_time", "TIMESTAMP"),  # when the range was planned
    # Set while an open transaction holds the partition's readable end below its written end:
    # since when the last stable offset has stood still (UTC); null when nothing is open.
    ("open_transaction_since", "TIMESTAMP"),
    # True once that has lasted longer than source.open_transaction_timeout.
    ("held_by_open_transaction", "BOOLEAN"),
    # The writer: tidemark:<stream>:<mode>:<streaming query id>. step_id counts per writer, so
    # rows of a recovery run and of the live job may share a step_id, never a writer.
    ("writer", "STRING"),
]


# Offset ranges a recovery or a backfill into events claimed before writing them (see
# tidemark.write_claims): the live job does not write a claimed offset, and every writer of one
# routes it under the G of the earliest claim covering it. Ordered by the table's commit versions.
CLAIMS_COLUMNS = [
    ("stream", "STRING"),
    ("claim_id", "STRING"),  # one per claim commit: its commit's user metadata, to find its version
    ("writer", "STRING"),  # tidemark:<stream>:<mode>:<run id>
    ("mode", "STRING"),  # recovery | backfill | redrive; released (a release row); settled (a settled range)
    ("source_partition", "INT"),
    ("start_offset", "BIGINT"),  # inclusive
    ("end_offset", "BIGINT"),  # exclusive
    # G the claimed offsets are routed under; null: none yet (a lake live never wrote), nothing late.
    ("global_watermark", "TIMESTAMP"),
    ("claimed_at", "TIMESTAMP"),
    # The claim's order, written by the maintenance job when it settles the table
    # (tidemark.claims_settlement); null: the version of the commit that made the claim, found in
    # the table's history by the claim id.
    ("claim_version", "BIGINT"),
]


ERASURES_COLUMNS = [
    ("stream", "STRING"),
    ("erasure_id", "STRING"),  # one per erasure run; also its commits' user metadata (erasure:<id>)
    ("predicate", "STRING"),  # the request's ``where``, as the person wrote it
    ("requested_by", "STRING"),
    ("reason", "STRING"),
    ("requested_at", "TIMESTAMP"),
    # One row per erased record: its identity in the log, so that no job writes it again.
    ("source_partition", "INT"),
    ("source_offset", "BIGINT"),
    ("log_timestamp", "TIMESTAMP"),
    ("event_time", "TIMESTAMP"),  # null for a record only quarantine held
    ("found_in", "STRING"),  # the tables that held it: events, late, quarantine (comma-separated)
]


def erasures_columns(positions: PositionType = KAFKA_OFFSETS) -> list[tuple[str, str]]:
    return with_positions(ERASURES_COLUMNS, positions)


_POSITION_COLUMNS = ("source_offset", "start_offset", "end_offset", "log_end_offset")


def with_positions(columns: list[tuple[str, str]], positions: PositionType) -> list[tuple[str, str]]:
    """``columns`` with every position column in the stream's position type."""
    return [(name, positions.sql_type if name in _POSITION_COLUMNS else sql_type) for name, sql_type in columns]


def ledger_columns(positions: PositionType = KAFKA_OFFSETS) -> list[tuple[str, str]]:
    return with_positions(LEDGER_COLUMNS, positions)


def claims_columns(positions: PositionType = KAFKA_OFFSETS) -> list[tuple[str, str]]:
    return with_positions(CLAIMS_COLUMNS, positions)


# Columns renamed since a table was first written, (old name, new name) per table, oldest first.
# ``batch_id`` meant two things: the aligned step in events, late, quarantine and the ledger, and
# Spark's micro-batch in seals (issue 26). A table that still has the old name gains the new one
# in place (Delta column mapping: a metadata commit, no rows rewritten; spark_jobs.lake.tables).
RENAMED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "events": (("batch_id", "step_id"),),
    "late": (("batch_id", "step_id"),),
    "quarantine": (("batch_id", "step_id"),),
    "ledger": (("batch_id", "step_id"),),
    "seals": (("batch_id", "micro_batch_id"),),
}


def ddl(columns: list[tuple[str, str]]) -> str:
    """The columns as a Spark DDL string, e.g. 'source_partition INT, source_offset BIGINT'."""
    return ", ".join(f"{name} {sql_type}" for name, sql_type in columns)
