"""How long the watermark page takes to answer on a month of ledger: 64 partitions, 30 days of
5-minute live batches (552,960 ledger rows), one partition stalled for the last day.

    .venv/bin/python benchmarks/watermark_page_load.py [--partitions 64] [--days 30]

The ledger is generated (generator.ledger_history) and written with deltalake in the layout
compaction leaves it in: everything older in compacted files, the newest 49 batches one small
file each (more than the hour between two maintenance runs leaves); ``--uncompacted-days N`` writes the last N
days one file per batch instead, as a ledger without compaction would hold them. The page is
timed through its FastAPI app (login switched off), the log not asked: the lake alone. Prints
the figures and writes benchmarks/results/watermark_page_load.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "plugins"))

from generator.ledger_history import LedgerHistory  # noqa: E402

MINUTE = 60_000
DAY = 24 * 60 * MINUTE
SMALL_FILES_LEFT = 49  # the most Delta's auto compaction left; an hour between maintenance runs leaves fewer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--uncompacted-days", type=int, default=0, help="write the newest N days one file per batch")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args(argv)

    now_ms = int(time.time() * 1000)
    now_ms -= now_ms % (5 * MINUTE)
    with tempfile.TemporaryDirectory(prefix="tidemark-page-load-") as folder:
        conf = _conf(Path(folder), args.partitions)
        from tidemark.stream_config import load_stream

        stream = load_stream(
            conf, "telemetry", {"TIDEMARK_LAKE_ROOT": f"{folder}/lake", "TIDEMARK_CHECKPOINT_ROOT": f"{folder}/cp"}
        )
        history = LedgerHistory(
            "telemetry",
            partitions=args.partitions,
            start_ms=now_ms - args.days * DAY,
            end_ms=now_ms,
            stalled_partition=args.partitions // 2,
            stalled_since_ms=now_ms - DAY,
            idle_partition=args.partitions - 1,
        )
        started = time.monotonic()
        rows = history.rows()
        files = _write_ledger(
            stream.table_path("ledger"), rows, args.partitions, args.uncompacted_days * DAY // history.interval_ms
        )
        written_s = time.monotonic() - started
        timings = _time_page(conf, stream, args.repeat, Path(folder))
    figures = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "benchmarks/watermark_page_load.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "partitions": args.partitions,
        "days": args.days,
        "ledger_rows": len(rows),
        "ledger_files": files,
        "generated_and_written_s": round(written_s, 1),
        **timings,
    }
    _write_results(args.results, figures)
    print(json.dumps(figures, indent=2))
    return 0


def _conf(folder: Path, partitions: int) -> Path:
    text = (REPO / "conf" / "streams.yaml").read_text().replace("partitions: 4", f"partitions: {partitions}", 1)
    path = folder / "streams.yaml"
    path.write_text(text)
    return path


def _write_ledger(path: str, rows: list[tuple], partitions: int, uncompacted_batches: int) -> int:
    """Write the ledger as compaction leaves it; returns its number of data files."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from tidemark.table_schemas import LEDGER_COLUMNS

    types = {
        "STRING": pa.string(),
        "BIGINT": pa.int64(),
        "INT": pa.int32(),
        "BOOLEAN": pa.bool_(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    }
    schema = pa.schema([(name, types[sql]) for name, sql in LEDGER_COLUMNS])
    tail = max(uncompacted_batches, SMALL_FILES_LEFT) * partitions
    old, recent = rows[:-tail], rows[-tail:]
    write_deltalake(path, pa.Table.from_pylist([dict(zip(schema.names, r)) for r in old], schema=schema), mode="append")
    for start in range(0, len(recent), partitions):
        batch = recent[start : start + partitions]
        write_deltalake(
            path, pa.Table.from_pylist([dict(zip(schema.names, r)) for r in batch], schema=schema), mode="append"
        )
    table = DeltaTable(path)
    table.create_checkpoint()  # delta-spark checkpoints every 10 commits; a reader starts from the newest
    return len(table.file_uris())


def _time_page(conf: Path, stream, repeat: int, folder: Path) -> dict:
    import os

    from fastapi.testclient import TestClient

    from connectors.lake_reader import read_stream_overview
    from tidemark_airflow.watermark_page import create_app

    os.environ["TIDEMARK_LAKE_ROOT"] = str(Path(stream.table_path("ledger")).parents[1])
    os.environ["TIDEMARK_CHECKPOINT_ROOT"] = stream.lake.checkpoint_root
    client = TestClient(create_app(conf_path=str(conf), reports_root=folder / "reports", require_login=False))
    page_s, overview_s = [], []
    for _ in range(repeat):
        started = time.monotonic()
        read_stream_overview(stream, ask_log=False)
        overview_s.append(time.monotonic() - started)
    stalled = None
    for _ in range(repeat):
        started = time.monotonic()
        response = client.get("/streams/telemetry", params={})
        page_s.append(time.monotonic() - started)
        assert response.status_code == 200, response.text[:500]
        stalled = response.text.count('data-status="STOP"')
    return {
        "overview_first_s": round(overview_s[0], 3),
        "overview_median_s": round(statistics.median(overview_s), 3),
        "page_first_s": round(page_s[0], 3),
        "page_median_s": round(statistics.median(page_s), 3),
        "page_note": "the page also asks the log; here the broker is absent, so that is one refused connection (ms)",
        "partitions_shown_stop": stalled,
    }


def _write_results(folder: Path, figures: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "watermark_page_load.json").write_text(json.dumps(figures, indent=2) + "\n")
    lines = [
        "# Watermark page load",
        "",
        f"Command: `.venv/bin/python {figures['command'].strip()}`, measured at {figures['measured_at']}.",
        "",
        "| partitions | days | ledger rows | ledger files | overview (first / median) | page (first / median) |",
        "|---|---|---|---|---|---|",
        f"| {figures['partitions']} | {figures['days']} | {figures['ledger_rows']:,} | {figures['ledger_files']} | "
        f"{figures['overview_first_s']} s / {figures['overview_median_s']} s | {figures['page_first_s']} s / {figures['page_median_s']} s |",
        "",
    ]
    (folder / "watermark_page_load.md").write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
