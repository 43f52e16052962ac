"""A family of N topics catching up a small backlog: the family's persist tick (a few drivers, each
persisting its members one after another) against each member persisted by its own job, side by
side in one run (issue 41: JVMs per tick, catch-up of all against the sum of single-stream times).

    flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/many_streams_catch_up.py \\
        [--topics 200] [--partitions 4] [--records 200] [--max-drivers 2] [--single-sample 10] \\
        [--results benchmarks/results/many_streams_catch_up.json]

Starts a broker of its own, creates ``--topics`` topics of ``--partitions`` partitions with
``--records`` records each (telemetry values, event times over the last hour), declares them as
one family (the shipped stream's keys) and lists them as the refresh DAG does.

- **The family's tick**, as ``tidemark_persist__family__<family>`` runs it without Airflow: the
  Spark-free look at every member (connectors.family_look), the members with work dealt into at
  most ``--max-drivers`` groups, one driver per group (spark_jobs/persist/family_job.py), all
  started at once. Wall time from the look to the last driver's end; JVMs started; each member's
  time inside its driver.
- **Each member alone**, as a declared stream's persist DAG runs it: spark_jobs/persist/job.py in
  available_now mode, one process (one JVM) per member, one after another, into a lake of its own.
  ``--single-sample`` members (spread over the family; all of them when 0): their sum, and the
  sum for all N at their mean when the sample is smaller.

Both lakes are counted afterwards (deltalake, no Spark): every record of every member, once.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RESULTS = REPO / "benchmarks" / "results" / "many_streams_catch_up.json"
FAMILY = "shops"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=200, help="records per topic")
    # No more drivers than cores: see benchmarks/many_streams_idle.py.
    parser.add_argument("--max-drivers", type=int, default=2)
    parser.add_argument("--single-sample", type=int, default=10, help="members persisted alone (0: all)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from benchmarks.scratch_environment import scratch_broker, scratch_environment
    from connectors.jars import ensure_jars, shared_jars_root

    jars = shared_jars_root()
    ensure_jars(jars, ["delta", "spark-kafka"])
    with tempfile.TemporaryDirectory(prefix="tidemark-many-catch-up-") as folder:
        scratch = Path(folder)
        with scratch_broker(scratch, jars) as broker:
            topics = _backlog(broker.bootstrap, args.topics, args.partitions, args.records)
            environment = scratch_environment(broker.bootstrap, scratch, jars)
            family_conf = _conf(scratch / "family", broker.bootstrap, args.max_drivers)
            alone_conf = _conf(scratch / "alone", broker.bootstrap, args.max_drivers)
            members = _listed(family_conf, alone_conf)
            family = _family_tick(family_conf, environment, scratch)
            sample = _sample(members, args.single_sample)
            alone = _each_alone(alone_conf, environment, sample, scratch)
            counted = {
                "family": _counted(family_conf, members, args.records),
                "alone": _counted(alone_conf, sample, args.records),
            }

    alone_sum = round(sum(alone.values()), 1)
    alone_all = round(alone_sum * len(members) / len(sample), 1)
    result = {
        "benchmark": "many_streams_catch_up",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "topics": args.topics,
        "partitions_per_topic": args.partitions,
        "records_per_topic": args.records,
        "max_drivers": args.max_drivers,
        "family_tick": family,
        "alone": {
            "members": len(sample),
            "seconds_each": alone,
            "sum_seconds": alone_sum,
            "mean_seconds": round(alone_sum / len(sample), 1),
            "sum_seconds_for_all": alone_all,
            "extrapolated": len(sample) < len(members),
            "jvms": len(sample),
        },
        "family_vs_sum_of_alone": round(alone_all / family["wall_seconds"], 1),
        "exactly_once": counted,
        "topics_listed": len(topics),
    }
    print(
        f"{len(members)} members, {args.records} records each: the family's tick {family['wall_seconds']} s with "
        f"{family['jvms']} JVMs; each alone {result['alone']['mean_seconds']} s mean over {len(sample)} "
        f"(sum for all {len(members)}: {alone_all} s{', extrapolated' if result['alone']['extrapolated'] else ''}): "
        f"{result['family_vs_sum_of_alone']}x"
    )
    print(f"every record once: {counted}")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.results}")
    return 0


def _backlog(bootstrap: str, topics: int, partitions: int, records: int) -> list[str]:
    from confluent_kafka.admin import AdminClient, NewTopic

    names = [f"shop.{index:03d}" for index in range(topics)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names], operation_timeout=120).values():
        future.result()
    produce_backlog(bootstrap, names, partitions, records)
    return names


def produce_backlog(bootstrap: str, names: list[str], partitions: int, records: int, span_ms: int = 3_600_000) -> None:
    """``records`` telemetry records on each topic of ``names``, round-robin over its partitions,
    their event times spread evenly over the last ``span_ms`` milliseconds."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "enable.idempotence": True})
    now_ms = int(time.time() * 1000)
    for name in names:
        for index in range(records):
            event_ms = now_ms - span_ms + index * (span_ms // records)
            iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(event_ms / 1000)) + f".{event_ms % 1000:03d}Z"
            value = json.dumps(
                {"device_id": f"{name}-{index % 7}", "event_time": iso, "lat": 52.0, "lon": 4.9, "battery": 50}
            )
            producer.produce(name, value.encode(), partition=index % partitions, timestamp=event_ms)
            producer.poll(0)
    if producer.flush(120):
        raise SystemExit("the backlog was not all produced")


def _conf(folder: Path, bootstrap: str, max_drivers: int) -> Path:
    """One family over every shop.NNN topic, its lake and checkpoints in ``folder``."""
    import yaml

    from benchmarks.many_streams import _shape

    folder.mkdir(parents=True)
    shape = _shape()
    shape["source"]["bootstrap_servers"] = bootstrap
    shape["lake"] = {"root": str(folder / "lake"), "checkpoint_root": str(folder / "checkpoints")}
    family = {"match": r"shop\..+", "max_drivers": max_drivers, **shape}
    (folder / "streams.yaml").write_text(yaml.safe_dump({"families": {FAMILY: family}}))
    return folder / "streams.yaml"


def _listed(*confs: Path) -> list[str]:
    from connectors.topic_refresh import refresh_family

    listed = [sorted(refresh_family(conf, FAMILY).members) for conf in confs]
    if any(members != listed[0] for members in listed):
        raise SystemExit(f"the two listings differ: {listed}")
    return listed[0]


def _family_tick(conf: Path, environment: dict[str, str], scratch: Path) -> dict:
    """The look, the groups, one driver per group started together: as the family's DAG runs them."""
    from connectors.family_look import look_before_persisting_family
    from tidemark.family_driver_result import FamilyDriverResult
    from tidemark.stream_config import read_streams_file
    from tidemark_airflow.family_look_operator import dealt

    started = time.monotonic()
    declared = read_streams_file(conf)
    family = declared.families[FAMILY]
    streams = [declared.streams[name] for name in family.members]
    looks = look_before_persisting_family(streams)
    with_work = [name for name, look in looks.items() if not look.nothing_new]
    look_s = time.monotonic() - started
    groups = dealt(with_work, family.rule.max_drivers)
    drivers = []
    for index, group in enumerate(groups):
        result_dir = scratch / f"driver-{index}"
        result_dir.mkdir()
        command = [sys.executable, str(REPO / "spark_jobs" / "persist" / "family_job.py"), "--conf", str(conf)]
        command += [argument for name in group for argument in ("--stream", name)]
        command += ["--result-dir", str(result_dir)]
        log = (scratch / f"driver-{index}.log").open("w")
        process = subprocess.Popen(
            command, env={**environment, "TIDEMARK_CONF": str(conf)}, stdout=log, stderr=subprocess.STDOUT
        )
        drivers.append((process, result_dir))
    results = []
    for process, result_dir in drivers:
        if process.wait() != 0:
            raise SystemExit(f"a driver failed ({process.returncode}); see {result_dir}.log")
        results.append(FamilyDriverResult.decode((result_dir / "result.json").read_bytes()))
    wall = time.monotonic() - started
    failed = [outcome.stream for result in results for outcome in result.failed()]
    if failed:
        raise SystemExit(f"members failed in their drivers: {failed}")
    inside = sorted(outcome.seconds for result in results for outcome in result.members)
    return {
        "wall_seconds": round(wall, 1),
        "look_seconds": round(look_s, 1),
        "members_with_work": len(with_work),
        "jvms": len(groups),
        "members_per_driver": [len(group) for group in groups],
        "driver_seconds": [result.seconds for result in results],
        "member_seconds_in_driver": {
            "median": inside[len(inside) // 2],
            "max": inside[-1],
            "sum": round(sum(inside), 1),
        },
    }


def _sample(members: list[str], size: int) -> list[str]:
    if size <= 0 or size >= len(members):
        return list(members)
    step = len(members) / size
    return [members[int(index * step)] for index in range(size)]


def _each_alone(conf: Path, environment: dict[str, str], members: list[str], scratch: Path) -> dict[str, float]:
    """spark_jobs/persist/job.py for each member, one process after another; seconds each."""
    seconds = {}
    for name in members:
        started = time.monotonic()
        with (scratch / f"alone-{name}.log").open("w") as log:
            done = subprocess.run(
                [
                    sys.executable,
                    str(REPO / "spark_jobs" / "persist" / "job.py"),
                    "--conf",
                    str(conf),
                    "--stream",
                    name,
                    "--mode",
                    "available_now",
                ],
                env={**environment, "TIDEMARK_CONF": str(conf)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if done.returncode != 0:
            raise SystemExit(f"{name} alone failed ({done.returncode}); see {scratch}/alone-{name}.log")
        seconds[name] = round(time.monotonic() - started, 1)
        print(f"  {name} alone: {seconds[name]} s", flush=True)
    return seconds


def _counted(conf: Path, members: list[str], records: int) -> dict:
    """Rows and distinct (partition, offset) in every member's events, against what was produced."""
    from deltalake import DeltaTable

    from tidemark.stream_config import load_streams

    streams = load_streams(conf)
    wrong = {}
    for name in members:
        table = DeltaTable(streams[name].table_path("events")).to_pyarrow_table(
            columns=["source_partition", "source_offset"]
        )
        distinct = len(set(zip(table["source_partition"].to_pylist(), table["source_offset"].to_pylist())))
        if table.num_rows != records or distinct != records:
            wrong[name] = (table.num_rows, distinct)
    return {"members": len(members), "records_each": records, "wrong": wrong}


if __name__ == "__main__":
    sys.exit(main())
