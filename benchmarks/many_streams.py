"""Many streams on one deployment (issue 41): what a family of N topics costs Airflow to parse.

    .venv/bin/python benchmarks/many_streams.py [--topics 200] [--partitions 4]
        [--results benchmarks/results/many_streams.json]

Writes a streams file with one family of ``--topics`` topics (the shipped telemetry stream's
keys) and its listing, as a refresh would have written it (no broker: parsing never asks one).
Then parses every DAG file of dags/ as Airflow's dag-processor does: each file in a child forked
from a parent that has imported Airflow, the file's Airflow imports pre-imported
(``parsing_pre_import_modules``), a DagBag of the file, and every DAG serialized
(DagSerialization.to_dict). Per file: wall and CPU seconds of the child, DAGs built. The sum is
one parse cycle of the folder, the figure issue 41 bounds (under 30 s for 200 streams). The
manager's own work (writing the serialized DAGs to the database) is not in it.

The same parse is measured with the family's members declared one by one under ``streams:``
(what a deployment without families writes), side by side, in the same run.

Then the watermark page's index with every member's last quality check remembered (one STALL
among them): the page app (tidemark_airflow.watermark_page) served by uvicorn on loopback and
loaded in headless Chromium (``--chromium``, default: the one on the PATH), five times: the
time until the page's load event, and the rows shown.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RESULTS = REPO / "benchmarks" / "results" / "many_streams.json"
DAG_FOLDER = REPO / "dags"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tidemark-many-streams-") as folder:
        folder = Path(folder)
        environment = _environment(folder)
        os.environ.update(environment)
        family_conf = _family_conf(folder / "family", args.topics, args.partitions)
        declared_conf = _declared_conf(folder / "declared", args.topics, args.partitions)
        import airflow  # noqa: F401 - the parent imports Airflow once, as the dag-processor does

        figures = {}
        for name, conf in (("family", family_conf), ("declared one by one", declared_conf)):
            files = [_parse_in_child(path, conf) for path in sorted(DAG_FOLDER.glob("tidemark_*.py"))]
            figures[name] = {
                "dags": sum(f["dags"] for f in files),
                "wall_s": round(sum(f["wall_s"] for f in files), 2),
                "cpu_s": round(sum(f["cpu_s"] for f in files), 2),
                "files": files,
            }
            print(f"\n{name}: {figures[name]['dags']} DAGs, one parse cycle {figures[name]['wall_s']:.1f} s wall")
            for f in files:
                print(f"  {f['file']:32} {f['dags']:5} DAGs {f['wall_s']:7.2f} s wall {f['cpu_s']:7.2f} CPU-s")
        page = _page_load(family_conf, folder / "reports", args.topics, args.chromium)
        print(
            f"\nthe page's index of {page['rows']} streams in Chromium: {page['load_s']} s (median of 5, each {page['each_s']})"
        )

    result = {
        "benchmark": "many_streams",
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "topics": args.topics,
        "partitions": args.partitions,
        "parse_cycle": figures,
        "page_index": page,
        "parse_cycle_ratio_family_to_declared": round(
            figures["family"]["wall_s"] / figures["declared one by one"]["wall_s"], 2
        ),
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nfamily / declared one by one: {result['parse_cycle_ratio_family_to_declared']}; written: {args.results}")
    return 0


def _environment(folder: Path) -> dict[str, str]:
    from stack.environment import embedded_environment

    overrides = {
        "TIDEMARK_HOME": str(folder / "home"),
        "AIRFLOW_HOME": str(folder / "home" / "airflow"),
        "TIDEMARK_LAKE_ROOT": str(folder / "lake"),
        "TIDEMARK_CHECKPOINT_ROOT": str(folder / "checkpoints"),
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIDEMARK"))}
    return {**overrides, **embedded_environment(REPO, {**base, **overrides})}


def _shape() -> dict:
    import yaml

    shape = copy.deepcopy(yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"])
    del shape["source"]["topic"], shape["source"]["partitions"], shape["offline_devices"]
    return shape


def _topics(count: int) -> list[str]:
    return [f"shop.{index:03d}" for index in range(count)]


def _family_conf(folder: Path, topics: int, partitions: int) -> Path:
    """A family of ``topics`` topics in a few lines, and its listing as a refresh writes it."""
    import yaml

    from tidemark.stream_families import stream_name_for
    from tidemark.topic_listing import refreshed, write_listing

    folder.mkdir(parents=True)
    shape = _shape()
    (folder / "streams.yaml").write_text(yaml.safe_dump({"families": {"shops": {"match": r"shop\..+", **shape}}}))
    listing = refreshed(
        None,
        "shops",
        shape["source"]["bootstrap_servers"],
        dict.fromkeys(_topics(topics), partitions),
        int(time.time() * 1000),
        stream_name_for,
    )
    write_listing(folder / "listings" / "shops.json", listing)
    return folder / "streams.yaml"


def _declared_conf(folder: Path, topics: int, partitions: int) -> Path:
    """The same topics, each a stream of its own under ``streams:``."""
    import yaml

    folder.mkdir(parents=True)
    streams = {}
    for topic in _topics(topics):
        stream = _shape()
        stream["source"].update(topic=topic, partitions=partitions)
        streams[topic.replace(".", "_")] = stream
    (folder / "streams.yaml").write_text(yaml.safe_dump({"streams": streams}))
    return folder / "streams.yaml"


def _page_load(conf: Path, reports: Path, topics: int, chromium: str | None) -> dict:
    """The index page with ``topics`` members remembered, loaded five times in Chromium."""
    import statistics

    import uvicorn
    from playwright.sync_api import sync_playwright

    from stack.ports import free_port
    from tidemark.quality_look import LastCheck, WorstPartition, remember_check
    from tidemark_airflow.watermark_page import create_app

    if chromium is None:
        raise SystemExit("headless Chromium is needed for the page's figure (apt-get install chromium)")
    for index, topic in enumerate(_topics(topics)):
        status = "STALL" if index == topics // 2 else "OK"
        worst = WorstPartition(index % 4, status, index * 10, f"{status}: as measured")
        remember_check(
            reports, topic.replace(".", "_"), LastCheck({}, status == "OK", int(time.time() * 1000), 4, worst)
        )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(str(conf), reports, require_login=False), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    loads = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            for _ in range(5):
                started = time.monotonic()
                page.goto(f"http://127.0.0.1:{port}/", wait_until="load")
                loads.append(round(time.monotonic() - started, 3))
            rows = page.locator("#streams tbody tr").count()
            first = page.locator("#streams tbody tr").first.get_attribute("data-status")
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    return {"rows": rows, "first_row_status": first, "load_s": statistics.median(loads), "each_s": loads}


def _parse_in_child(path: Path, conf: Path) -> dict:
    """One DAG file parsed and its DAGs serialized in a forked child, as the dag-processor does."""
    read, write = os.pipe()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: the processor's _parse_file, without its comms
        os.close(read)
        os.environ["TIDEMARK_CONF"] = str(conf)
        dags = -1
        try:
            import structlog
            from airflow.dag_processing.dagbag import DagBag
            from airflow.dag_processing.processor import _pre_import_airflow_modules
            from airflow.serialization.serialized_objects import DagSerialization

            _pre_import_airflow_modules(str(path), structlog.get_logger())
            bag = DagBag(dag_folder=str(path))
            if bag.import_errors:
                raise RuntimeError(f"{path.name}: {bag.import_errors}")
            for dag in bag.dags.values():
                DagSerialization.to_dict(dag)
            dags = len(bag.dags)
        finally:
            os.write(write, str(dags).encode())
            os._exit(0)
    os.close(write)
    dags = int(os.read(read, 64) or b"-1")
    os.close(read)
    os.waitpid(pid, 0)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if dags < 0:
        raise SystemExit(f"parsing {path.name} failed (see its output above)")
    return {"file": path.name, "dags": dags, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


if __name__ == "__main__":
    sys.exit(main())
