"""A quarantine re-drive after a contract fix, end to end on a real broker, Spark and Delta: the
records the old contract refused, and only those, move into events (or late, where their hour is
sealed), exactly once across a crash mid-way, a rerun and a second re-drive; the quality run of
those hours then counts them, once.

The stream first requires ``firmware``; a sixth of the records lack it and are quarantined
(missing_field), beside records that are broken for good (malformed_json, wrong_type). The fix
makes ``firmware`` optional. The re-drive of missing_field is stopped right after its events
commit (a crash point), run again, then run a third time.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.persist_job import produce, run_in_process, run_redrive, write_stream_config

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
MINUTE_MS = 60_000


def _config(conf: Path, firmware_required: bool) -> None:
    document = yaml.safe_load(conf.read_text())
    fields = document["streams"]["telemetry"]["payload"]["fields"]
    fields["firmware"] = {"type": "string", "required": firmware_required}
    conf.write_text(yaml.safe_dump(document))


def _identities(spark, lake: Path, table: str) -> Counter:
    rows = spark.read.format("delta").load(str(lake / table)).select("source_partition", "source_offset").collect()
    return Counter((r.source_partition, r.source_offset) for r in rows)


def test_a_redrive_after_a_contract_fix_moves_exactly_the_records_that_now_decode_once(kafka_broker, spark, tmp_path):
    from spark_jobs.persist.job import main as persist
    from tidemark.crash_points import CrashPointReached

    topic = "redrive"
    kafka_broker.create_topic(topic, 2)
    now = int(time.time() * 1000)
    base = now - now % HOUR_MS - 3 * HOUR_MS  # three hours back: the first two get sealed
    records, kinds, offsets = [], {}, Counter()
    for i in range(240):
        at, partition = base + i * 45_000, i % 2
        document = {"device_id": f"d-{i % 5}", "event_time": at, "lat": 52.0, "lon": 4.9, "battery": 50}
        kind = "ok"
        if i % 6 == 1:
            kind = "no_firmware"
        elif i % 40 == 3:
            kind, document["firmware"] = "wrong_type", 7
        else:
            document["firmware"] = "1.0"
        value = json.dumps(document).encode() if i % 50 != 7 else b"{broken"
        kinds[(partition, offsets[partition])] = "malformed_json" if i % 50 == 7 else kind
        offsets[partition] += 1
        records.append((partition, value, at, f"d-{i % 5}".encode(), [("trace_id", f"t-{i}".encode())]))
    produce(kafka_broker.bootstrap, topic, records)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["payload"]["event_time_format"] = "epoch_millis"
    conf.write_text(yaml.safe_dump(document))
    _config(conf, firmware_required=True)
    argv = ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"]
    assert run_in_process(persist, argv, tmp_path / "persist.log") == 0, (tmp_path / "persist.log").read_text()[-3000:]

    lake = tmp_path / "lake" / "telemetry"
    quarantine = spark.read.format("delta").load(str(lake / "quarantine")).collect()
    refused = {(r.source_partition, r.source_offset): r.reason for r in quarantine}
    to_move = {k for k, kind in kinds.items() if kind == "no_firmware"}
    missing = {k for k, reason in refused.items() if reason == "missing_field"}
    assert missing == to_move and len(to_move) == 38, (sorted(missing ^ to_move), Counter(refused.values()))

    # The contract is fixed; the re-drive dies right after its events commit.
    _config(conf, firmware_required=False)
    crash = {"TIDEMARK_TEST_FAULTS": "1", "TIDEMARK_CRASH_AT": json.dumps({"after": "events", "action": "raise"})}
    with pytest.raises(CrashPointReached):
        run_redrive(conf, tmp_path, "crashed", crash, reason="missing_field")
    moved_once = _identities(spark, lake, "events") + _identities(spark, lake, "late")
    assert set(moved_once) & to_move and not set(_identities(spark, lake, "late")) & to_move, "events only, so far"

    code, rerun = run_redrive(conf, tmp_path, "rerun", reason="missing_field")
    assert code == 0, (tmp_path / "redrive-rerun.log").read_text()[-3000:]
    events, late = _identities(spark, lake, "events"), _identities(spark, lake, "late")
    assert max((events + late).values()) == 1, "each record once, in one of the two"
    assert to_move <= set(events) | set(late) and len(set(late) & to_move) > 0, "sealed hours' records went to late"
    assert {k for k in set(events) | set(late) if kinds[k] != "ok"} == to_move, "nothing else moved"
    assert rerun["moved_to_late"] == len(set(late) & to_move) and rerun["moved_to_events"] == 0
    assert rerun["candidates"] == len(set(late) & to_move), "the records the crashed run moved are not candidates"
    moved = spark.read.format("delta").load(str(lake / "late")).collect()
    assert {bytes(r.record_headers[0].value) for r in moved if (r.source_partition, r.source_offset) in to_move}
    assert all(r.firmware is None and r.device_id for r in moved if (r.source_partition, r.source_offset) in to_move)

    code, again = run_redrive(conf, tmp_path, "again", reason="missing_field")
    assert code == 0 and again["candidates"] == 0 and again["moved_to_events"] == again["moved_to_late"] == 0
    code, other = run_redrive(conf, tmp_path, "other", reason="wrong_type")
    assert code == 0 and other["still_refused"] == {"wrong_type": other["candidates"]} and other["candidates"] > 0
    assert _identities(spark, lake, "events") == events, "a reason that still does not decode moves nothing"

    # The quality run of those hours counts each moved record once: no duplicate, no hole.
    from expectations.quality_run import main as quality

    result = tmp_path / "quality.json"
    argv = ["--stream", "telemetry", "--conf", str(conf), "--report-dir", str(tmp_path / "reports")]
    argv += ["--gx-dir", str(tmp_path / "reports" / "gx"), "--run-name", "after", "--result", str(result)]
    run_in_process(quality, argv, tmp_path / "quality.log")
    checked = json.loads(result.read_text())
    assert checked["success"] and {p["status"] for p in checked["partitions"]} == {"OK"}, checked["partitions"]
    assert all(h["duplicated_offsets"] == 0 and h["persisted"] == h["data_records"] for h in checked["hours_checked"])
    stuck = Counter(partition for (partition, _), kind in kinds.items() if kind in ("malformed_json", "wrong_type"))
    # The checked hours' quarantined records are some of those still refused, none of the moved.
    quarantined = {p["partition"]: p["quarantined"] for p in checked["partitions"]}
    assert 0 < quarantined[1] <= stuck[1] < len(to_move) and quarantined[0] <= stuck[0], (quarantined, stuck)
    # Each hour's counts are the lake's rows of that hour, the moved ones among them.
    lake_counts = Counter()
    for table in ("events", "late"):
        for r in spark.read.format("delta").load(str(lake / table)).select("source_partition", "event_time").collect():
            lake_counts[(table, r.source_partition, r.event_time.strftime("%Y-%m-%dT%H:00:00Z"))] += 1
    for h in checked["hours_checked"]:
        assert (h["records"], h["late"]) == (
            lake_counts[("events", h["partition"], h["hour"])],
            lake_counts[("late", h["partition"], h["hour"])],
        ), h
