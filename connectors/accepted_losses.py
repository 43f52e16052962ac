"""The lake's accepted losses and the check of a new one, without Spark (DESIGN.md, the Spark
line): the ledger's small facts read with delta-rs, the log asked what it lost at the live
position now. ``tidemark accept-lost`` checks with it before it triggers anything; the accept-lost
job checks again, with the same function, right before it writes (tidemark.accepted_loss)."""

from __future__ import annotations

import time

from tidemark.accepted_loss import (
    ACCEPTED_LOSS_MODE,
    AcceptedLoss,
    AcceptLostRefused,
    AcceptLostRequest,
    check_acceptance,
)
from tidemark.stream_config import StreamConfig

_COLUMNS = ["source_partition", "start_offset", "end_offset", "writer", "read_time"]


def read_accepted_losses(stream: StreamConfig, path: str | None = None) -> list[AcceptedLoss]:
    """The ranges accepted as lost in the ledger at ``path`` (default: the stream's), in order;
    none without a ledger."""
    from deltalake.exceptions import TableNotFoundError

    from connectors.lake_storage import open_delta_table

    try:
        ledger = open_delta_table(path or stream.table_path("ledger"))
    except TableNotFoundError:
        return []
    table = ledger.to_pyarrow_table(columns=_COLUMNS, filters=[("mode", "=", ACCEPTED_LOSS_MODE)])
    position = stream.source.position_type.from_column
    return sorted(
        AcceptedLoss.from_ledger(
            row["source_partition"],
            position(row["start_offset"]),
            position(row["end_offset"]),
            row["writer"],
            None if row["read_time"] is None else int(row["read_time"].timestamp() * 1000),
        )
        for row in table.to_pylist()
    )


def check_against_lake_and_log(stream: StreamConfig, request: AcceptLostRequest, now_ms: int | None = None) -> bool:
    """``check_acceptance`` of ``request`` against the partition's live position in the ledger,
    what the stream's log has lost there now, and the acceptances so far: True to write, False
    when the very same range is accepted already; AcceptLostRefused otherwise."""
    from connectors.partitioned_logs import open_log
    from connectors.persist_look import read_ledger_standing
    from tidemark.partition_status import PartitionStatus
    from tidemark.source_state import RECORD_COUNT_SLICING, PartitionState, SourceState

    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    live = read_ledger_standing(stream).partitions.get(request.partition)
    position = None if live is None else live.position
    connection = stream.source.connection()
    lost = ()
    if position is not None:
        log = open_log(connection)
        try:
            if request.partition not in log.partition_ids():
                raise AcceptLostRefused(
                    f"{connection.log_words} has no {connection.partition_words(request.partition)}; nothing was written"
                )
            state = PartitionState(position, position, None, live.status or PartitionStatus.ACTIVE, 0)
            lost = log.lost_to_retention(
                SourceState(-1, now_ms, RECORD_COUNT_SLICING, None, None, {request.partition: state})
            )
        finally:
            log.close()
    accepted = read_accepted_losses(stream)
    return check_acceptance(request, position, lost, accepted, stream.source.position_type.name)
