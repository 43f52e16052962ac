"""A recovery's or a backfill's claim placed exactly at each moment of a live batch (issue 36).

The live job pauses (tidemark.crash_points, action ``pause``) at four points of a run: before its
batches 1 and 2 decide how they write (they are planned: their offsets are in the checkpoint),
and after its batches 3 and 4 decided (nothing committed yet). At each pause the test runs
claimers, a recovery on partition 0 and a backfill into events on partition 1, each claiming 8
offsets placed by the batch ranges the checkpoint shows at that moment:

    after commit       offsets of the batch before, committed      live wrote them: 0 inserted
    before plan        offsets past the paused batch's end          live leaves them out: 8 inserted
    plan -> decision   offsets of the paused batch, undecided       it waits; live leaves them out: 8
    decision -> commit offsets of the paused batch, decided         it waits; live wrote them: 0

A claimer that meets the paused batch waits for it (the live driver beats while paused); the test
lets live go on once the claimer says it waits. Each run ends with both jobs done (claimers exit
0), every produced (partition, offset) once in the table a clean run routes it to, each
claimer's ``inserted`` (its own MERGE metrics) exactly as above, and every live batch leaving
out exactly the claimed offsets committed before it decided.

Twice on one lake (the second run with TIDEMARK_FULL_SUITE=1, for the suite's time): first fresh,
the claims table absent when live starts (under the code before issue 36 the first claimer made it
while live ran, and live died reading it half made); then, with more records produced, a second
live run over the claims the first left (present).

Each run, while live is paused before its batch 2 decides, the claims table is settled as the
maintenance job settles it (issue 40: the finished claimers released their claims, which become
settled ranges): the same offsets stay claimed under the same G, and live's later batches leave
out the settled offsets ahead of it exactly as they left out the claims.

The live job runs in a thread of this process (harness.interleaving.LiveInThread): its own
streaming query and checkpoint, the same pipeline spark-submit runs. Live and a claimer as
separate driver processes, one of them killed, are tests/integration/test_lake_on_s3.py.

On local disk in the suite; the same matrix with the lake, the claims and the checkpoint on the
loopback S3 with TIDEMARK_FULL_SUITE=1.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

import pytest
import yaml

from harness.interleaving import LiveInThread, ResumeWhenWaiting, pause_at, wait_until_paused_in_thread
from harness.log_layouts import routed_pairs
from harness.persist_job import (
    backfill_request_args,
    batches_persisted,
    produce,
    run_backfill,
    run_recover,
    telemetry_value,
    write_stream_config,
)
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration

TOPIC = "claims_at_every_moment"
PARTITIONS = 2
PER_RUN = 250  # records a partition gets before each live run
BUDGET = 100  # records a live batch: about 50 of each partition
STEP_MS = 20_000  # log time between two records of a partition: an offset is a whole second
CLAIMED = 8
UNDECODABLE_EVERY = 97  # offsets o with o % 97 == 5 are not JSON: quarantined
# The claims table when live starts: absent (the first claimer makes it while live runs, issue 36),
# then present with the first run's claims and settled ranges. The second run costs a minute of
# the suite's budget and proves what every other claim test starts from (a table present), so it
# runs with TIDEMARK_FULL_SUITE=1; the settled ranges live reads are proven in the first run's
# later batches too.
CLAIMS_TABLE_AT_START = ("absent", "present") if os.environ.get("TIDEMARK_FULL_SUITE") == "1" else ("absent",)


@dataclass(frozen=True)
class Claim:
    """One claimer's run: ``job`` claimed [start, end) of ``partition`` at ``moment`` of live's
    micro-batch ``batch`` (the batch the offsets belong to); what it inserted, whether it waited."""

    job: str
    moment: str
    batch: int
    partition: int
    start: int
    end: int
    inserted: int
    waited: bool

    @property
    def written_by_live(self) -> bool:
        """Live's batch holding the offsets decided how to write before the claim: it wrote them."""
        return self.moment in ("after commit", "decision -> commit")


@pytest.mark.parametrize(
    "store",
    [
        "local",
        pytest.param(
            "s3",
            marks=pytest.mark.skipif(
                os.environ.get("TIDEMARK_FULL_SUITE") != "1",
                reason="the matrix on the loopback S3: TIDEMARK_FULL_SUITE=1 (test_lake_on_s3.py runs the incident there)",
            ),
        ),
    ],
)
def test_a_claim_at_each_moment_of_a_live_batch_ends_with_every_record_once_and_exact_counts(
    store, kafka_broker, spark, tmp_path, request, monkeypatch
):
    topic = f"{TOPIC}_{store}"
    kafka_broker.create_topic(topic, PARTITIONS)
    base_ms = (int(time.time()) - 4 * 3600) * 1000
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, PARTITIONS, max_records_per_batch=BUDGET)
    environ = None
    if store == "s3":
        environ = request.getfixturevalue("spark_on_loopback_s3").lake_environment(f"claims-{tmp_path.name}")
        for name, value in environ.items():  # for live's thread, the claimers and the readers alike
            monkeypatch.setenv(name, value)
        document = yaml.safe_load(conf.read_text())
        document["streams"]["telemetry"]["lake"] = {
            "root": environ["TIDEMARK_LAKE_ROOT"],
            "checkpoint_root": environ["TIDEMARK_CHECKPOINT_ROOT"],
        }
        conf.write_text(yaml.safe_dump(document))
    stream = load_stream(conf, "telemetry")
    lake, checkpoint = f"{stream.lake.root.rstrip('/')}/{stream.name}", stream.checkpoint_path("persist")
    claims: list[Claim] = []

    def claim(job: str, moment: str, batch: int, partition: int, start: int, point) -> None:
        """Run one claimer now, in this thread; ``point``: the pause live is at (resumed once the
        claimer waits for live's batch)."""
        log, result = tmp_path / f"{job}-{len(claims)}.log", tmp_path / f"{job}-{len(claims)}.json"
        end = start + CLAIMED
        with ResumeWhenWaiting(point, log) as watch:
            if job == "recovery":
                code = run_recover(conf, partition, f"{start}-{end}", log=log, result=result)
            else:
                window = [_iso(base_ms + o * STEP_MS) for o in (start, end)]
                code = run_backfill(
                    conf,
                    *backfill_request_args(conf, *window, partitions=str(partition)),
                    "--result",
                    str(result),
                    log=log,
                )
        assert code == 0, f"{job} at {moment} exited {code}:\n{log.read_text()[-3000:]}"
        inserted = json.loads(result.read_text())["inserted"]
        claims.append(Claim(job, moment, batch, partition, start, end, inserted, watch.waited))

    settled_before = 0  # claims settled by the settlements so far
    for run, claims_table in enumerate(CLAIMS_TABLE_AT_START):
        first_offset = run * PER_RUN
        _produce(kafka_broker.bootstrap, topic, base_ms, range(first_offset, first_offset + PER_RUN))
        folder = tmp_path / f"pauses-{run}"
        points = (
            pause_at(folder, "before_first", 1),
            pause_at(folder, "before_first", 2),
            pause_at(folder, "decided", 3),
            pause_at(folder, "decided", 4),
        )
        live_log = tmp_path / f"live-{run}.log"
        live = LiveInThread(conf, live_log, points).start()
        if claims_table == "present":
            assert _claimed_offsets(spark, stream) == _offsets(claims), "the claims the first run left"

        wait_until_paused_in_thread(points[0], live, live_log)  # run batch 1 planned, batch 0 committed
        paused = _pending(spark, checkpoint)
        before, ranges = _batch(spark, checkpoint, paused - 1, first_offset), _batch(spark, checkpoint, paused)
        for job, partition in (("recovery", 0), ("backfill", 1)):
            claim(job, "after commit", paused - 1, partition, _inside(before, partition), points[0])
            # Past the paused batch's end by 30: read by the next batch, clear of what is claimed
            # at that batch's start at the next pause.
            claim(job, "before plan", paused + 1, partition, ranges[partition][1] + 30, points[0])
        claim("recovery", "plan -> decision", paused, 0, _inside(ranges, 0), points[0])  # live goes on

        wait_until_paused_in_thread(points[1], live, live_log)  # run batch 2 planned
        # The maintenance job settles the claims of the finished claimers while live is paused:
        # two of them claimed offsets ahead of live, which its next batch must still leave out.
        assert _settle_and_check(spark, stream, claims).claims_settled == len(claims) - settled_before
        settled_before = len(claims)
        paused = _pending(spark, checkpoint)
        claim("backfill", "plan -> decision", paused, 1, _inside(_batch(spark, checkpoint, paused), 1), points[1])

        wait_until_paused_in_thread(points[2], live, live_log)  # run batch 3 decided, nothing committed
        paused = _pending(spark, checkpoint)
        claim("recovery", "decision -> commit", paused, 0, _inside(_batch(spark, checkpoint, paused), 0), points[2])

        wait_until_paused_in_thread(points[3], live, live_log)  # run batch 4 decided, nothing committed
        paused = _pending(spark, checkpoint)
        claim("backfill", "decision -> commit", paused, 1, _inside(_batch(spark, checkpoint, paused), 1), points[3])
        live.join()

        # The claimers: each waited exactly when it met live's batch in flight, and inserted
        # exactly what live had not written.
        this_run = claims[run * 8 :]
        assert len(this_run) == 8
        for c in this_run:
            assert c.waited == (c.moment in ("plan -> decision", "decision -> commit")), (claims_table, c)
            assert c.inserted == (0 if c.written_by_live else CLAIMED), (claims_table, c)

        # Live: every batch left out exactly the claimed offsets committed before it decided.
        batches = {line["micro_batch_id"]: line for line in batches_persisted(live_log)}
        assert len(batches) >= 5, f"{len(batches)} batches: the test needs run batch 4 and more"
        for batch_id, line in sorted(batches.items()):
            live_ranges = _batch(spark, checkpoint, batch_id, first_offset if batch_id == min(batches) else None)
            expected: dict[str, list[list[int]]] = {}
            for c in claims:
                if c.batch > batch_id or (c.batch == batch_id and c.written_by_live):
                    continue  # claimed after this batch decided
                lo, hi = max(c.start, live_ranges[c.partition][0]), min(c.end, live_ranges[c.partition][1])
                if lo < hi:
                    expected.setdefault(str(c.partition), []).append([lo, hi])
            expected = {p: sorted(spans) for p, spans in sorted(expected.items())}  # no two claims touch
            assert line.get("left_out", {}) == expected, (claims_table, batch_id)

        # The lake: every produced pair once, in the table a clean run routes it to.
        routed = routed_pairs(lake, environ)
        assert {pair: tables for pair, tables in routed.items() if len(tables) > 1} == {}, claims_table
        assert {pair: tables[0] for pair, tables in routed.items()} == {
            (p, o): ("quarantine" if o % UNDECODABLE_EVERY == 5 else "events")
            for p in range(PARTITIONS)
            for o in range(first_offset + PER_RUN)
        }, claims_table

    # Settled once more, every claimer having finished: nothing held, the table a few rows.
    settled = _settle_and_check(spark, stream, claims)
    assert settled.claims_settled == len(claims) - settled_before, settled
    assert settled.rows_after == settled.settled_ranges <= len(claims) and settled.rows_after < settled.rows_before, (
        settled
    )


def _settle_and_check(spark, stream, claims: list[Claim]):
    """Settle the claims table (tidemark.claims_settlement) as the maintenance job does, and check
    that every claimer so far finished (released) and that no writer's decision changed: the same
    offsets claimed, each routed under the same G."""
    from spark_jobs.lake.claims_table import ClaimsTable
    from spark_jobs.lake.tables import LakeTables
    from spark_jobs.maintenance.claims_settling import settle_claims

    table = ClaimsTable(spark, LakeTables(spark, stream))
    before = _routing(table.all_claims())
    settled = settle_claims(spark, stream)
    assert not settled.yielded and settled.claims_kept == 0, settled  # every claimer released its claim
    assert _routing(table.all_claims()) == before
    assert _claimed_offsets(spark, stream) == _offsets(claims)
    return settled


def _routing(claimed) -> dict[tuple[int, int], int]:
    """{(partition, offset): G} every claimed offset is routed under (the earliest claim's)."""
    from tidemark.write_claims import earliest_claim_routing

    bound = {p: (0, 10 * PER_RUN) for p in range(PARTITIONS)}
    return {
        (r.partition, o): r.global_watermark_ms
        for r in earliest_claim_routing(bound, claimed)
        for o in range(r.start, r.end)
    }


def _claimed_offsets(spark, stream) -> set[tuple[int, int]]:
    from spark_jobs.lake.claims_table import ClaimsTable
    from spark_jobs.lake.tables import LakeTables

    return set(_routing(ClaimsTable(spark, LakeTables(spark, stream)).all_claims()))


def _offsets(claims: list[Claim]) -> set[tuple[int, int]]:
    return {(c.partition, o) for c in claims for o in range(c.start, c.end)}


def _produce(bootstrap: str, topic: str, base_ms: int, offsets: range) -> None:
    records = []
    for offset in offsets:
        log_ms = base_ms + offset * STEP_MS
        for p in range(PARTITIONS):
            value = b"not json {" if offset % UNDECODABLE_EVERY == 5 else telemetry_value(f"scooter-{p}", log_ms)
            records.append((p, value, log_ms))
    assert produce(bootstrap, topic, records) == dict.fromkeys(range(PARTITIONS), len(offsets))


def _pending(spark, checkpoint: str) -> int:
    """The micro-batch live's checkpoint shows planned and not committed: the paused one."""
    from spark_jobs.streaming_checkpoint import pending_batch

    return pending_batch(spark, checkpoint)


def _batch(spark, checkpoint: str, batch_id: int, first: int | None = None) -> dict[int, tuple[int, int]]:
    """{partition: (start, end)} the checkpoint shows for micro-batch ``batch_id``; ``first``:
    where a checkpoint's very first batch started (it has no entry before it)."""
    from spark_jobs.streaming_checkpoint import planned_ranges, read_text, source_offset
    from tidemark.source_state import SourceState

    if batch_id == 0:
        offset = source_offset(read_text(spark, f"{checkpoint}/offsets/0"))
        return {p: (first or 0, end) for p, end in SourceState.from_offset(offset).positions().items()}
    return {r.partition: (r.start_offset, r.end_offset) for r in planned_ranges(spark, checkpoint, batch_id)}


def _inside(ranges: dict[int, tuple[int, int]], partition: int) -> int:
    """The start of CLAIMED offsets well inside the batch's range of ``partition``."""
    start, end = ranges[partition]
    assert end - start >= CLAIMED + 4, f"partition {partition}'s range {ranges[partition]} is too short to claim in"
    return start + 2


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
