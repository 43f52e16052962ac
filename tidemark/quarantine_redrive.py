"""A quarantine re-drive's decisions, without Spark: which quarantined records now decode, and
where each goes, under the same rules as a live batch.

After a contract is fixed (a field declared, a registry schema restored), records the persist job
quarantined may decode. ``redrive`` runs each through the stream's record decoder as it is now
(the raw bytes, key and headers the quarantine row kept, read at the time it was first read, so
the future guard judges it as live did) and routes it as live would have: late when its event
time is behind G − allowed lateness, G being the global watermark its offset is routed under
(the earliest claim's, live's where live read it: tidemark.write_claims), so a record whose hour
is sealed goes to ``late``, and every re-drive of it, concurrent or after a crash, decides the
same table. A record that still does not decode stays where it is, counted by its reason now.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tidemark.lateness import Lateness, LatenessClassifier
from tidemark.record_decoder import DecodedEvent, RecordDecoder, Rejection


@dataclass(frozen=True)
class QuarantinedRecord:
    """One quarantine row: the record's identity and what was kept of it (ms since the epoch, UTC)."""

    partition: int
    position: int
    log_timestamp_ms: int | None
    key: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] | None
    value: bytes | None
    step_id: int | None
    read_time_ms: int


@dataclass(frozen=True)
class Moved:
    """A record that now decodes, and the G it was routed under (None: nothing is late)."""

    record: QuarantinedRecord
    event: DecodedEvent
    global_watermark_ms: int | None


@dataclass
class Redriven:
    """What ``redrive`` decided: records for ``events``, records for ``late``, how many still
    do not decode, by the reason they have now, and how many an erasure names (left out)."""

    events: list[Moved] = field(default_factory=list)
    late: list[Moved] = field(default_factory=list)
    still_refused: Counter = field(default_factory=Counter)
    erased: int = 0


def redrive(
    records: Iterable[QuarantinedRecord],
    decoder: RecordDecoder,
    routed_under: Callable[[int, int], int | None],
    lateness: LatenessClassifier,
    erased: Callable[[QuarantinedRecord, DecodedEvent], bool] = lambda record, event: False,
) -> Redriven:
    """Decide each record: ``routed_under(partition, position)`` is the G its offset is routed
    under; ``erased(record, event)``: an erasure names the record now that it decodes (its
    position is erased, or its values meet an erasure's predicate: a quarantined Avro record an
    erasure could not read), so it is left out. Never raises for a record; a registry that does
    not answer raises tidemark.writer_schemas.RegistryUnavailableError (nothing is decided then)."""
    decided = Redriven()
    for record in records:
        result = decoder.decode(record.value, record.read_time_ms, record.headers, record.key)
        if isinstance(result, Rejection):
            decided.still_refused[result.reason] += 1
            continue
        if erased(record, result):
            decided.erased += 1
            continue
        g = routed_under(record.partition, record.position)
        moved = Moved(record, result, g)
        late = lateness.classify(result.event_time_ms, g) is Lateness.LATE
        (decided.late if late else decided.events).append(moved)
    return decided
