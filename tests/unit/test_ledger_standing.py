"""The persist look's reading of the ledger (connectors.persist_look.read_ledger_standing) on a
ledger written by deltalake: each partition's furthest live row by tidemark.furthest_live_row's
rule, for Kafka offsets and Kinesis sequence keys alike, with rows of other modes, an idle
partition's many rows at one end, and G the largest of the live rows'.

Expected values are stated from the rows written, never computed by the code under test.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from connectors.persist_look import read_ledger_standing
from harness.shipped_stream import shipped_stream
from tidemark.log_position import position_key
from tidemark.nothing_new import LedgerPartition
from tidemark.partition_status import PartitionStatus

T0 = 1_795_309_200_000  # 2026-11-22T01:00:00Z
TS = pa.timestamp("us", tz="UTC")
SPARSE = 10**40  # Kinesis-like sequence numbers: far beyond a long


@pytest.mark.parametrize("sparse", [False, True], ids=["kafka-offsets", "kinesis-sequence-keys"])
def test_the_furthest_live_row_of_each_partition_whatever_the_rows_order(tmp_path, sparse):
    stream = shipped_stream(tmp_path)

    def position(n: int):
        return position_key(n * SPARSE + 3) if sparse else n

    # (step, partition, mode, end, read time offset s, status, G offset s)
    rows = [
        (1, 0, "live", 100, 10, "ACTIVE", 5),
        (2, 0, "live", 250, 20, "ACTIVE", 15),
        (3, 0, "recovery", 900, 30, "ACTIVE", 99),  # not live: neither its end nor its G counts
        (2, 1, "live", 40, 20, "ACTIVE", 15),
        (3, 1, "live", 40, 30, "IDLE", 25),  # idle: the end stays, the newest read stands
        (4, 1, "live", 40, 40, "IDLE", 35),
        (5, 1, "live", 40, 35, "ACTIVE", 30),  # a larger step read earlier: the read time ranks first
        (9, 2, "live", 7, 50, "ACTIVE", 20),
        (10, 2, "live", 7, 50, "IDLE", 21),  # same end and read time: the larger step
        # Positions of 2 and 10 digits (or keys) order as numbers, not as text.
        (11, 3, "live", 10, 60, "ACTIVE", 22),
        (12, 3, "live", 9, 70, "IDLE", 23),
    ]
    # Two appends, the later one holding older rows of partition 1: file order means nothing.
    for part in (rows[5:], rows[:5]):
        write_deltalake(
            stream.table_path("ledger"),
            pa.table(
                {
                    "step_id": pa.array([r[0] for r in part], pa.int64()),
                    "source_partition": pa.array([r[1] for r in part], pa.int32()),
                    "mode": [r[2] for r in part],
                    "end_offset": pa.array([position(r[3]) for r in part], pa.string() if sparse else pa.int64()),
                    "read_time": pa.array([datetime.fromtimestamp(T0 / 1000 + r[4], UTC) for r in part], TS),
                    "partition_status": [r[5] for r in part],
                    "global_watermark": pa.array([datetime.fromtimestamp(T0 / 1000 + r[6], UTC) for r in part], TS),
                }
            ),
            mode="append",
        )

    standing = read_ledger_standing(stream)

    def at(n: int) -> int:
        return n * SPARSE + 3 if sparse else n

    assert standing.partitions == {
        0: LedgerPartition(at(250), PartitionStatus.ACTIVE),
        1: LedgerPartition(at(40), PartitionStatus.IDLE),
        2: LedgerPartition(at(7), PartitionStatus.IDLE),
        3: LedgerPartition(at(10), PartitionStatus.ACTIVE),
    }
    assert standing.global_watermark_ms == T0 + 35_000


def test_no_ledger_is_no_partitions(tmp_path):
    standing = read_ledger_standing(shipped_stream(tmp_path))
    assert (standing.partitions, standing.global_watermark_ms) == ({}, None)
