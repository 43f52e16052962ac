"""A snapshot update's log listing on an aged ``_delta_log``: delta-storage's inherited ``listFrom``
against tidemark's LogStores' own, side by side, in one JVM.

    flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/log_listing.py

For each size N it builds a ``_delta_log``-like folder of N commit files (``NNN.json``), Delta's
version checksums (``NNN.crc``), a checkpoint every 10 versions, ``_last_checkpoint`` and a
``_staged_commits/`` sub-folder; on local disk also Hadoop's ``.NAME.crc`` side file of each.
Local disk: N = 1,000 and 30,000 (a month of 5-minute persist runs is about 8,640 commits a
table; 30,000 is a long log retention). The loopback S3 (s3proxy, benchmarks' own, in scratch):
N = 1,000 and 5,000. Then ``listFrom`` of version N-10's listing prefix (``%020d.``, as Delta
lists from a checkpoint: about 20 entries come back) is timed with the inherited method
(``io.delta.storage.LocalLogStore``, which does not override it) and with the store's
(``LocalPutIfAbsentLogStore``, ``S3PutIfAbsentLogStore``): median of 5 after one warm-up, in
milliseconds, the Java call from Python included. On S3 also the requests one listing sends,
from S3A's ``store_io_request`` counter (the SDK counts every request of S3A's client, the
store's LIST included). Both listings must return the same entries, or the script fails.

Writes benchmarks/results/log_listing.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

LOCAL_SIZES = (1_000, 30_000)
S3_SIZES = (1_000, 5_000)
REPEATS = 5
CHECKPOINT_INTERVAL = 10


def log_names(commits: int) -> list[str]:
    """The object names of an aged ``_delta_log`` holding versions 0..commits-1."""
    names = ["_last_checkpoint", "_staged_commits/00000000000000000000.0b5e.json"]
    for version in range(commits):
        names += [f"{version:020d}.json", f"{version:020d}.crc"]
        if version % CHECKPOINT_INTERVAL == 0 and version:
            names.append(f"{version:020d}.checkpoint.parquet")
    return names


def build_local_log(folder: Path, commits: int) -> None:
    (folder / "_staged_commits").mkdir(parents=True)
    for name in log_names(commits):
        (folder / name).write_bytes(b"{}\n")
        if "/" not in name:
            (folder / f".{name}.crc").write_bytes(b"crc")  # Hadoop's checksum side file


def build_s3_log(s3, prefix: str, commits: int) -> None:
    from harness.s3_requests import put_object

    def put(name: str) -> None:
        status = put_object(
            s3.endpoint, "tidemark", f"{prefix}/{name}", b"{}\n", s3.access_key_id, s3.secret_access_key
        )
        if status != 200:
            raise RuntimeError(f"PUT {prefix}/{name} answered {status}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, log_names(commits)))


def measure(spark, store, start: str, requests=None) -> dict:
    """Median milliseconds of ``store.listFrom(start)`` over REPEATS runs, the entries' names, and
    the S3 requests of one run when ``requests`` reads S3A's counter."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(start)

    def listed() -> list:
        return jvm.org.apache.hadoop.util.Lists.newArrayList(store.listFrom(path, conf))

    listed()  # warm-up: classes loaded, the file system made
    before = requests() if requests else None
    entries = listed()
    sent = requests() - before if requests else None
    timings = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        listed()
        timings.append((time.perf_counter() - began) * 1000)
    # S3A dates a sub-folder (a common prefix, no object of its own) at the moment it is listed.
    names = [
        f"{entry.getPath()} directory"
        if entry.isDirectory()
        else f"{entry.getPath()} {entry.getLen()} {entry.getModificationTime()}"
        for entry in entries
    ]
    return {"median_ms": round(statistics.median(timings), 2), "entries": names, "requests": sent}


def side_by_side(spark, inherited, ours, folder_uri: str, commits: int, requests=None) -> dict:
    start = f"{folder_uri}/{commits - CHECKPOINT_INTERVAL:020d}."
    old = measure(spark, inherited, start, requests)
    new = measure(spark, ours, start, requests)
    if old["entries"] != new["entries"]:
        raise AssertionError(f"listFrom({start}) differs:\ninherited {old['entries']}\nstore     {new['entries']}")
    row = {
        "commits": commits,
        "entries_returned": len(new["entries"]),
        "inherited_ms": old["median_ms"],
        "store_ms": new["median_ms"],
        "inherited_requests": old["requests"],
        "store_requests": new["requests"],
    }
    print(
        f"  N={commits:>6,}  returned {row['entries_returned']:>3}  inherited {old['median_ms']:>8.2f} ms"
        f"  store {new['median_ms']:>7.2f} ms"
        + (f"  requests {old['requests']} vs {new['requests']}" if requests else ""),
        flush=True,
    )
    return row


def main() -> None:
    from benchmarks.scratch_environment import benchmark_spark_session
    from connectors.jars import ensure_jars, shared_jars_root
    from stack.loopback_s3 import LoopbackS3
    from stack.ports import free_port

    jars = shared_jars_root()
    ensure_jars(jars, ["delta", "s3proxy"])
    report = {
        "command": "flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/log_listing.py",
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip(),
        "repeats": REPEATS,
        "start": "listing prefix of version N-10 ('%020d.')",
    }
    with tempfile.TemporaryDirectory(prefix="log-listing-") as scratch:
        s3 = LoopbackS3(state_dir=Path(scratch) / "s3", jars_dir=jars, port=free_port())
        s3.start()
        try:
            os.environ.update(s3.environment)
            spark = benchmark_spark_session("log_listing")
            jvm = spark._jvm
            conf = spark._jsc.hadoopConfiguration()
            inherited = jvm.io.delta.storage.LocalLogStore(conf)

            print("local disk (listFrom, median of 5):", flush=True)
            local_store = jvm.dev.tidemark.delta.LocalPutIfAbsentLogStore(conf)
            report["local"] = []
            for commits in LOCAL_SIZES:
                folder = Path(scratch) / f"local-{commits}" / "_delta_log"
                build_local_log(folder, commits)
                report["local"].append(side_by_side(spark, inherited, local_store, f"file:{folder}", commits))

            print("loopback S3 (listFrom, median of 5):", flush=True)
            s3_store = jvm.dev.tidemark.delta.S3PutIfAbsentLogStore(conf)
            report["s3"] = []
            for commits in S3_SIZES:
                prefix = f"log-listing/t{commits}/_delta_log"
                build_s3_log(s3, prefix, commits)
                folder_uri = f"s3a://tidemark/{prefix}"
                fs = jvm.org.apache.hadoop.fs.Path(folder_uri).getFileSystem(conf)

                def requests(fs=fs) -> int:
                    return fs.getIOStatistics().counters().get("store_io_request")

                report["s3"].append(side_by_side(spark, inherited, s3_store, folder_uri, commits, requests))
            spark.stop()
        finally:
            s3.stop()
    out = REPO / "benchmarks" / "results" / "log_listing.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
