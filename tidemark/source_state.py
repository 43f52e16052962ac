"""The source's event-time state, as it travels in Spark's checkpointed offsets.

One ``SourceState`` is the end offset of one planned batch: where each partition's slice ends,
and the event-time state the batch is processed under (each partition's watermark and status,
the global watermark G). Because Spark checkpoints offsets before a batch runs, the state
survives restarts, and a replayed batch is routed and sealed exactly like its first run.

A batch may hold several aligned steps (``steps``): consecutive slices, each planned by the
same rule with its own G and T, packed into one Spark micro-batch up to the row budget so that
the fixed cost of a batch is paid once per budget, not once per max_drift of event time. Each
record is routed under the G of its own step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidemark.open_transaction import OpenTransaction
from tidemark.partition_status import PartitionStatus

EVENT_TIME_SLICING = "event_time"
RECORD_COUNT_SLICING = "record_count"


@dataclass(frozen=True)
class PartitionState:
    position: int  # next offset to read once this batch is done
    # The log's readable end when the batch was planned (Kafka: the last stable offset, as a
    # read_committed reader sees it; capped at the run's target in an available_now run).
    log_end: int
    watermark_ms: int | None  # W_p before this batch's records
    status: PartitionStatus
    last_produced_ms: int  # when the partition last produced: its last record's timestamp
    # Set when the slice was cut at the target T: the next unread record's timestamp is >= T.
    next_record_at_least_ms: int | None = None
    # Set while an open transaction keeps the readable end (LSO) below the written end.
    open_transaction: OpenTransaction | None = None
    # True in the state after a batch that passed over a range accepted as lost
    # (tidemark.accepted_loss) without reading it: [previous position, position) holds nothing read.
    accepted_loss: bool = False

    def to_json(self) -> dict:
        passed = {"accepted_loss": True} if self.accepted_loss else {}
        return {
            "position": self.position,
            "log_end": self.log_end,
            "watermark_ms": self.watermark_ms,
            "status": self.status.value,
            "last_produced_ms": self.last_produced_ms,
            "next_record_at_least_ms": self.next_record_at_least_ms,
            "open_transaction": None if self.open_transaction is None else self.open_transaction.to_json(),
            **passed,
        }

    @classmethod
    def from_json(cls, data: dict) -> PartitionState:
        return cls(
            position=data["position"],
            log_end=data["log_end"],
            watermark_ms=data.get("watermark_ms"),
            status=PartitionStatus(data.get("status", PartitionStatus.ACTIVE.value)),
            last_produced_ms=data.get("last_produced_ms", 0),
            next_record_at_least_ms=data.get("next_record_at_least_ms"),
            open_transaction=OpenTransaction.from_json(data.get("open_transaction")),
            accepted_loss=data.get("accepted_loss", False),
        )


@dataclass(frozen=True)
class PlannedStep:
    """One aligned step of a batch: the G its records are routed under and its target T (ms,
    UTC); per partition that read in it, the end offset (exclusive) of its slice (``ends``), W_p
    before the step (``watermarks``) and, when the slice was cut at T, that bound (``cuts``)."""

    global_watermark_ms: int | None
    target_ms: int | None
    ends: dict[int, int]
    watermarks: dict[int, int | None] = field(default_factory=dict)
    cuts: dict[int, int | None] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "global_watermark_ms": self.global_watermark_ms,
            "target_ms": self.target_ms,
            "ends": {str(p): [end, self.watermarks.get(p), self.cuts.get(p)] for p, end in sorted(self.ends.items())},
        }

    @classmethod
    def from_json(cls, data: dict) -> PlannedStep:
        ends = {int(p): values for p, values in data["ends"].items()}
        return cls(
            data["global_watermark_ms"],
            data["target_ms"],
            {p: values[0] for p, values in ends.items()},
            {p: values[1] for p, values in ends.items()},
            {p: values[2] for p, values in ends.items()},
        )


@dataclass(frozen=True)
class SourceState:
    # -1 for the initial offset, then +1 per aligned step planned: a batch of n steps is numbered
    # by its last, its steps are plan_seq - n + 1 .. plan_seq (each is a batch in the ledger).
    plan_seq: int
    read_time_ms: int  # when the batch was planned: the "now" of the future guard
    slicing: str  # event_time (aligned) or record_count
    global_watermark_ms: int | None  # G the batch's records are routed and sealed under
    target_ms: int | None  # T = G + max_drift, when slicing is event_time
    partitions: dict[int, PartitionState] = field(default_factory=dict)
    # The batch's aligned steps in order, the last one with this state's G and T; empty when
    # the batch is a single step (the state itself).
    steps: tuple[PlannedStep, ...] = ()

    def positions(self) -> dict[int, int]:
        return {p: state.position for p, state in self.partitions.items()}

    def to_offset(self, topic: str) -> dict:
        return {
            "topic": topic,
            "plan_seq": self.plan_seq,
            "read_time_ms": self.read_time_ms,
            "slicing": self.slicing,
            "global_watermark_ms": self.global_watermark_ms,
            "target_ms": self.target_ms,
            "partitions": {str(p): state.to_json() for p, state in sorted(self.partitions.items())},
            **({"steps": [step.to_json() for step in self.steps]} if self.steps else {}),
        }

    @classmethod
    def from_offset(cls, offset: dict) -> SourceState:
        return cls(
            plan_seq=offset.get("plan_seq", -1),
            read_time_ms=offset["read_time_ms"],
            slicing=offset.get("slicing", RECORD_COUNT_SLICING),
            global_watermark_ms=offset.get("global_watermark_ms"),
            target_ms=offset.get("target_ms"),
            partitions={int(p): PartitionState.from_json(state) for p, state in offset["partitions"].items()},
            steps=tuple(PlannedStep.from_json(step) for step in offset.get("steps", ())),
        )
