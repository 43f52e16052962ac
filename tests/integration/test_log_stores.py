"""Several Spark drivers committing to one Delta table at the same moment: on S3 (the loopback
s3proxy) and on local disk; and making one lake's tables at the same moment.

The proof of tidemark's LogStores (connectors/jvm/log-stores): three driver processes append one
acknowledged row each per round, meeting at a barrier before every append so that their commits
race for the same version. With the put-if-absent stores the log must be contiguous and hold
every acknowledged row exactly once, and some commits must have lost a race and been retried (or
the test proved nothing). The same drivers append the same rows, in the same rounds and then a
few more, to a second S3 table that commits with delta-spark's default S3SingleDriverLogStore: it
must lose acknowledged rows, so the harness can fail. (Delta's default store on local disk loses
commits too, but rarely enough that a control could not be relied on: measured once in the notes
of issue 36, two drivers in lock step, 60 rounds each: one of 120 lost, the table unreadable from
version 101 on.)

Before they append, the same drivers make a fresh stream's six tables at the same moment
(issue 36: spark_jobs.lake.table_creation): every driver succeeds every round and
each table is made by exactly one of them. The code before failed 7 of 16 such makings with two
drivers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from connectors.jars import ensure_jars, shared_jars_root
from harness.s3_requests import put_object

pytestmark = pytest.mark.integration

DRIVERS = 3
# Every round the three drivers' commits meet at a barrier, so each round has lost races to
# retry: five rounds (15 racing commits) prove it as six did, for one round less of the suite.
ROUNDS = 5
# The control's commits are cheap (no lost race to retry) and it loses a commit in roughly one
# of five: over 30 appends a run in which it happens to lose none is about one in a thousand.
CONTROL_ROUNDS = 10
PUT_IF_ABSENT = "s3a://tidemark/log-store-proof/put-if-absent/events"
LOCAL = "local"  # the local table: under the race's temporary folder (Race.local)
LOCAL_ROUNDS = 3  # 9 racing commits, meeting at a barrier each round
# One making round: three drivers making six tables at once are 18 makings, of which the code
# before issue 36 failed about half; a second round cost 15 s of the suite's budget and proved no more.
MAKE_ROUNDS = 1
TABLES = ("events", "late", "quarantine", "ledger", "seals", "claims")
SINGLE_DRIVER = "s3://tidemark/log-store-proof/single-driver/events"  # delta-spark's default store
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Race:
    acked: dict[str, list[str]]  # table → the row ids whose append returned
    made: list[list[dict]]  # per driver: each making round's outcome
    local: Path  # the local table
    seconds: float


def test_the_loopback_s3_lets_exactly_one_of_concurrent_conditional_puts_win(loopback_s3):
    rounds = []
    for round_ in range(20):
        with ThreadPoolExecutor(16) as pool:
            statuses = list(
                pool.map(
                    lambda writer, round_=round_: put_object(
                        loopback_s3.endpoint,
                        "tidemark",
                        f"put-if-absent/{round_}.json",
                        str(writer).encode() * 4096,
                        loopback_s3.access_key_id,
                        loopback_s3.secret_access_key,
                        if_none_match=True,
                    ),
                    range(16),
                )
            )
        rounds.append(Counter(statuses))

    assert rounds == [Counter({200: 1, 412: 15})] * 20


@pytest.fixture(scope="module")
def race(loopback_s3, tmp_path_factory) -> Race:
    """Three driver processes; in each round one append per driver to each table that has rounds left.

    One race for both tables: the control costs no second set of JVM start-ups."""
    ensure_jars(shared_jars_root(), ["delta"])  # Delta, S3A and the LogStore, for the drivers
    folder = tmp_path_factory.mktemp("log-store-race")
    (folder / "sync").mkdir()
    (folder / "acks").mkdir()
    local = folder / "local" / "events"
    env = {
        **os.environ,
        **loopback_s3.environment,
        "TIDEMARK_SPARK_MASTER": "local[1]",
        "TIDEMARK_DRIVER_MEMORY": "512m",
        "TIDEMARK_JARS": str(shared_jars_root()),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
    }
    started = time.monotonic()
    drivers = []
    for driver in range(DRIVERS):
        command = [
            sys.executable,
            "-m",
            "harness.delta_append_driver",
            "--table",
            PUT_IF_ABSENT,
            "--rounds",
            str(ROUNDS),
            "--table",
            SINGLE_DRIVER,
            "--rounds",
            str(CONTROL_ROUNDS),
            "--table",
            str(local),
            "--rounds",
            str(LOCAL_ROUNDS),
            "--lake",
            str(folder / "lake"),
            "--make-rounds",
            str(MAKE_ROUNDS),
            "--driver",
            str(driver),
            "--drivers",
            str(DRIVERS),
            "--sync",
            str(folder / "sync"),
            "--acks",
            str(folder / "acks"),
            *(["--create"] if driver == 0 else []),
        ]
        log = open(folder / f"driver-{driver}.log", "wb")
        drivers.append((subprocess.Popen(command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT), log))
    for process, log in drivers:
        try:
            process.wait(timeout=600)
        finally:
            log.close()
    failed = [d for d, (process, _) in enumerate(drivers) if process.returncode != 0]
    assert not failed, "\n".join((folder / f"driver-{d}.log").read_text()[-3000:] for d in failed)
    acked = {
        table: [row for d in range(DRIVERS) for row in (folder / "acks" / f"{number}.{d}").read_text().split()]
        for number, table in enumerate((PUT_IF_ABSENT, SINGLE_DRIVER, LOCAL))
    }
    made = [
        [json.loads(line) for line in (folder / "acks" / f"make.{d}").read_text().splitlines()] for d in range(DRIVERS)
    ]
    return Race(acked, made, local, time.monotonic() - started)


def test_three_drivers_committing_at_once_lose_nothing_with_the_put_if_absent_log_store(loopback_s3, race):
    commits = _commits(loopback_s3, PUT_IF_ABSENT)
    rows = _row_ids(loopback_s3, PUT_IF_ABSENT)
    expected = {f"d{driver}-r{round_}" for driver in range(DRIVERS) for round_ in range(ROUNDS)}

    assert sorted(race.acked[PUT_IF_ABSENT]) == sorted(expected)  # every append returned
    assert sorted(commits) == list(range(DRIVERS * ROUNDS + 1))  # version 0 creates, one per append, no gap
    assert Counter(rows) == Counter(expected)  # each acknowledged row once, nothing else
    # A commit that lost the race for version v re-read the log and landed later than v.
    retried = [version for version, read in commits.items() if read is not None and version - read > 1]
    print(
        f"put-if-absent: {len(commits)} versions, {len(retried)} of {DRIVERS * ROUNDS} commits retried after "
        f"losing a race; the race took {race.seconds:.1f} s"
    )
    assert len(retried) > 0


def test_three_drivers_committing_at_once_to_local_disk_lose_nothing(race):
    from connectors.lake_storage import open_delta_table

    log = race.local / "_delta_log"
    versions = sorted(int(name.name[:-5]) for name in log.glob("*.json") if name.name[:-5].isdigit())
    rows = open_delta_table(str(race.local)).to_pyarrow_table(columns=["id"])["id"].to_pylist()
    expected = {f"d{driver}-r{round_}" for driver in range(DRIVERS) for round_ in range(LOCAL_ROUNDS)}

    assert sorted(race.acked[LOCAL]) == sorted(expected)  # every append returned
    assert versions == list(range(DRIVERS * LOCAL_ROUNDS + 1))  # version 0 creates, one per append, no gap
    assert Counter(rows) == Counter(expected)  # each acknowledged row once, nothing else
    assert [path.name for path in log.iterdir() if path.name.endswith(".tmp")] == [], "no temporary file left"
    # A commit that lost the race for version v re-read the log and landed later than v.
    read = {version: _read_version((log / f"{version:020d}.json").read_text()) for version in versions}
    retried = [version for version, seen in read.items() if seen is not None and version - seen > 1]
    print(
        f"local: {len(versions)} versions, {len(retried)} of {DRIVERS * LOCAL_ROUNDS} commits retried after losing a race"
    )
    assert len(retried) > 0


def test_three_drivers_making_one_lake_s_tables_at_once_all_succeed_and_each_table_is_made_once(race):
    for round_ in range(MAKE_ROUNDS):
        outcomes = [next(o for o in driver if o["round"] == round_) for driver in race.made]
        assert [o.get("error") for o in outcomes] == [None] * DRIVERS, f"round {round_}: {outcomes}"
        made = [table for o in outcomes for table in o["made"]]
        assert sorted(made) == sorted(TABLES), f"round {round_}: each table made by exactly one driver: {outcomes}"


def test_the_same_race_on_delta_sparks_default_s3_log_store_loses_acknowledged_rows(loopback_s3, race):
    rows = _row_ids(loopback_s3, SINGLE_DRIVER)
    acked = race.acked[SINGLE_DRIVER]
    lost = set(acked) - set(rows)

    print(f"S3SingleDriverLogStore: {len(acked)} rows acknowledged, {len(lost)} lost")
    # Most appends return; one that read a commit being replaced fails unacknowledged (the driver goes on).
    assert len(acked) > DRIVERS * CONTROL_ROUNDS // 2
    assert len(lost) > 0


def _commits(loopback_s3, table: str) -> dict[int, int | None]:
    """Every commit file of the table's log: version → the version its transaction had read."""
    from pyarrow import fs

    s3 = loopback_s3.filesystem()
    log = table.split("://", 1)[1] + "/_delta_log"
    commits = {}
    for info in s3.get_file_info(fs.FileSelector(log)):
        name = info.base_name
        if name.endswith(".json") and name[:-5].isdigit():
            with s3.open_input_stream(info.path) as stream:
                commits[int(name[:-5])] = _read_version(stream.read().decode())
    return commits


def _read_version(commit_file: str) -> int | None:
    """The version a commit's transaction had read (its commitInfo's readVersion)."""
    actions = [json.loads(line) for line in commit_file.splitlines() if line]
    return next((a["commitInfo"] for a in actions if "commitInfo" in a), {}).get("readVersion")


def _row_ids(loopback_s3, table: str) -> list[str]:
    from connectors.lake_storage import open_delta_table

    return open_delta_table(table, environ=loopback_s3.environment).to_pyarrow_table(columns=["id"])["id"].to_pylist()
