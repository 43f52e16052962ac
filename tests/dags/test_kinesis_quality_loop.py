"""The Lyft shape on Kinesis, end to end with `airflow dags test` (issue 27, section 4): one shard of
eight stops being read (the chaos switch) while the others go on; the quality DAG reports it, triggers
recovery by sequence ranges, the recover DAG replays it, and the lake ends up holding every record
put exactly once, with G never decreasing. Real boto3 calls on the loopback Kinesis, spark-submit
through the Spark provider, Delta.

The frozen shard is STALL (its rows show the position constant with records unread), not STOP: see
the assertion's comment. While it is frozen it has no watermark, so G is unknown and no hour seals:
the failing check comes before any hour is sealed without it. The wall-time figures (stop → failing
check → recovered → every shard OK) go to benchmarks/results/kinesis_lyft_shape.json.

Expected values come from what PutRecords answered (shard and sequence number of every record),
never from the code under test; sequence numbers are only compared, never subtracted.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from test_quality_and_recovery_dags import _latest_summary

from harness.airflow_process import dag_runs, dags_test
from harness.alarm_receivers import HOOK_LOGIN, HOOK_PASSWORD, SMTP_LOGIN, SMTP_PASSWORD, alerts_section
from harness.kinesis_stream import (
    put_telemetry_on_shards,
    python_workers_environment,
    read_lake,
    write_kinesis_stream_config,
)
from harness.persist_job import REPO, run_persist

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
SHARDS = 8
FROZEN = 5
FIGURES = REPO / "benchmarks" / "results" / "kinesis_lyft_shape.json"
COMMAND = (
    "TIDEMARK_WRITE_FIGURES=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/dags/test_kinesis_quality_loop.py"
)


def _records(start_ms: int, per_shard: int) -> list[tuple[int, str, int]]:
    """One record a minute per shard from ``start_ms``: (shard's partition, device, event time ms)."""
    return [
        (shard, f"scooter-{shard}-{i % 4}", start_ms + i * MINUTE_MS)
        for i in range(per_shard)
        for shard in range(SHARDS)
    ]


def _ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.replace(tzinfo=value.tzinfo or UTC).timestamp() * 1000)


def _sealed_hours(tmp_path: Path) -> list[int]:
    """The hours (ms, UTC) the lake's seals table holds."""
    from deltalake import DeltaTable

    seals = tmp_path / "lake" / "telemetry" / "seals"
    if not (seals / "_delta_log").exists():
        return []
    return sorted(_ms(row["hour"]) for row in DeltaTable(str(seals)).to_pyarrow_table().to_pylist())


def _hour(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%MZ")


def test_a_frozen_shard_of_eight_is_reported_recovered_and_then_ok(
    airflow_environment, loopback_kinesis, spark, tmp_path, receivers
):
    stream_name = "dag_kinesis_lyft"
    loopback_kinesis.create_stream(stream_name, SHARDS)
    client = loopback_kinesis.client()
    now_ms = int(time.time() * 1000)
    # Three hours of event time, one record a minute per shard: hours seal as G passes them.
    put = put_telemetry_on_shards(client, stream_name, _records(now_ms - 3 * HOUR_MS, 120))
    conf = write_kinesis_stream_config(tmp_path, loopback_kinesis.endpoint, stream_name, SHARDS)
    document = yaml.safe_load(conf.read_text())
    # stall_timeout far longer than the test: the job writes a row every run, so a shard that stops
    # being read must be told by its rows (STALL), not by the job's silence (STOP of a silent job,
    # which asks for no replay).
    document["streams"]["telemetry"]["quality"] = {"stall_timeout": "30m", "stall_window": 6}
    document["streams"]["telemetry"]["alerts"] = alerts_section()
    conf.write_text(yaml.safe_dump(document))
    lateness_ms = 10 * MINUTE_MS
    assert document["streams"]["telemetry"]["event_time"]["allowed_lateness"] == "10m"
    home = Path(airflow_environment["TIDEMARK_HOME"])
    # No aws_conn_id on the stream: the operator's spark-submit finds the loopback's keys in the
    # environment (TIDEMARK_KINESIS_*), as boto3's default chain would find AWS_* ones.
    environment = {
        **airflow_environment,
        **loopback_kinesis.environment,
        "TIDEMARK_CONF": str(conf),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        **receivers.connections(),
    }
    freeze = {"TIDEMARK_CHAOS_FREEZE": f"telemetry:{FROZEN}"}

    # Shard 5 stops being read: two persist runs read nothing from it while records keep arriving.
    # Both are the job the persist DAG submits, run in this process (the Kafka loop,
    # test_quality_and_recovery_dags, shows the chaos switch reaching it through the operator); the
    # quality and recover DAGs below take the loopback's keys through the operator's spark-submit.
    stopped_at = time.monotonic()
    with python_workers_environment(spark, loopback_kinesis.environment):
        run_persist(
            conf,
            "--mode",
            "available_now",
            log=tmp_path / "first_frozen_run.log",
            environment={**loopback_kinesis.environment, **freeze},
        )
    assert "chaos_freeze" in (tmp_path / "first_frozen_run.log").read_text()
    put += put_telemetry_on_shards(client, stream_name, _records(now_ms - HOUR_MS + 1_000, 30))
    with python_workers_environment(spark, loopback_kinesis.environment):
        run_persist(
            conf,
            "--mode",
            "available_now",
            log=tmp_path / "second_frozen_run.log",
            environment={**loopback_kinesis.environment, **freeze},
        )
    assert "chaos_freeze" in (tmp_path / "second_frozen_run.log").read_text()
    of_frozen = sorted(r.sequence for r in put if r.partition == FROZEN)
    assert len(of_frozen) == 150
    frozen_lake = read_lake(tmp_path)
    assert not [p for p in frozen_lake.persisted() if p[0] == FROZEN], "a frozen shard's record was persisted"
    frozen_rows = [row for row in frozen_lake.ledger_of(FROZEN) if row["mode"] == "live"]
    assert len(frozen_rows) >= 2 and len({row["end_offset"] for row in frozen_rows}) == 1, frozen_rows
    frozen_position = frozen_rows[0]["end_offset"]
    assert frozen_position <= of_frozen[0], "the frozen shard's position is past a record it never read"

    # The quality run notices: shard 5 STALL, the others OK; recovery is triggered with shard 5's
    # unread sequence range; the run fails.
    recover_runs_before = dag_runs(environment, "tidemark_recover__telemetry")
    quality = dags_test(environment, "tidemark_quality__telemetry")
    detected_s = time.monotonic() - stopped_at
    assert quality.returncode != 0, "a stalled shard must fail the quality run"
    summary = _latest_summary(home)
    statuses = {p["partition"]: p["status"] for p in summary["partitions"]}
    assert statuses == {p: "STALL" if p == FROZEN else "OK" for p in range(SHARDS)}, statuses
    assert f"partition {FROZEN}: STALL" in quality.output
    # STALL, not STOP: on Kinesis the ledger holds no record count, so "the log end grew while the
    # position stood" (STOP (a)) cannot be told; the job wrote a row seconds ago, far inside
    # stall_timeout, so it is not silent (STOP (b)). What is left is the rows' own evidence: the
    # position constant across them with records unread.
    (frozen_reasons,) = [p["reasons"] for p in summary["partitions"] if p["partition"] == FROZEN]
    stall_reason = next(r for r in frozen_reasons if r.startswith("STALL"))
    assert f"read position constant at sequence number {frozen_position} across {len(frozen_rows)} rows" in (
        stall_reason
    ), frozen_reasons
    assert "records unread" in stall_reason and "MillisBehindLatest" in stall_reason

    # Within one sealed hour of event time: the stop is at shard 5's first record, and the failing
    # check must come before G passes the seal of the hour after the stop's. A shard nothing was
    # read from has no watermark, so G (the minimum over the shards) is unknown in every live row
    # so far and no hour sealed: the frozen shard held the lake back instead of letting hours
    # seal without it.
    stop_event_ms = min(r.event_time_ms for r in put if r.partition == FROZEN)
    next_hour_sealed_at_ms = (stop_event_ms // HOUR_MS + 2) * HOUR_MS + lateness_ms
    g_at_check = max((_ms(row["global_watermark"]) or 0 for row in read_lake(tmp_path).ledger), default=0) or None
    sealed_at_check = _sealed_hours(tmp_path)
    assert (g_at_check, sealed_at_check) == (None, []), (
        f"G {g_at_check and _hour(g_at_check)} and hours {[_hour(h) for h in sealed_at_check]} sealed while "
        f"shard {FROZEN} was frozen (the next hour's seal after the stop needs G at {_hour(next_hour_sealed_at_ms)})"
    )

    (request,) = summary["recovery_requests"]
    assert (request["stream"], request["partition"], request["restart_live"]) == ("telemetry", FROZEN, True)
    # One range, from the frozen position past every record put on shard 5: everything unread at the
    # check, not only what the check's probe of the shard read.
    ((start, end),) = [(r["start"], r["end"]) for r in request["ranges"]]
    in_request = [s for s in of_frozen if start <= s < end]
    assert start == frozen_position and in_request == of_frozen, (
        f"the request replays [{start}, {end}) of shard {FROZEN}: {len(in_request)} of its {len(of_frozen)} unread "
        f"records (sequence numbers {of_frozen[0]}..{of_frozen[-1]})"
    )
    triggered = {
        run_id: conf
        for run_id, conf in dag_runs(environment, "tidemark_recover__telemetry").items()
        if run_id not in recover_runs_before
    }
    assert list(triggered.values()) == [request], "the quality run triggered one recovery, with the request it reported"

    # A person is told, once for the run, by e-mail and by webhook: the stream, shard 5, STALL; no
    # credential of either connection in either message.
    (mail,), (post,) = receivers.mails, receivers.posts
    assert f"Subject: [tidemark] telemetry: partition {FROZEN} STALL" in mail.text
    assert [(p["partition"], p["status"]) for p in post.body["partitions"]] == [(FROZEN, "STALL")]
    for secret in (SMTP_LOGIN, SMTP_PASSWORD, HOOK_LOGIN, HOOK_PASSWORD):
        assert secret not in mail.text and secret not in post.text

    # Recovery (as triggered): replays shard 5's range, restarts the live job (STALL: the live job
    # was the cause).
    persist_runs_before = dag_runs(environment, "tidemark_persist__telemetry")
    recovered = dags_test(environment, "tidemark_recover__telemetry", "--conf", json.dumps(request))
    recovered_s = time.monotonic() - stopped_at
    assert recovered.returncode == 0, recovered.output[-8000:]
    assert f"{len(of_frozen)} records inserted" in recovered.output
    restarted = set(dag_runs(environment, "tidemark_persist__telemetry")) - set(persist_runs_before)
    assert len(restarted) == 1, "the request's restart_live triggered one persist run"

    # The live job, no longer frozen, reads shard 5 too (insert-only where recovery wrote): the job
    # the persist DAG submits, run in this process. The next quality DAG run finds every shard OK.
    with python_workers_environment(spark, loopback_kinesis.environment):
        run_persist(
            conf,
            "--mode",
            "available_now",
            log=tmp_path / "live_resumed.log",
            environment=loopback_kinesis.environment,
        )
    passed = dags_test(environment, "tidemark_quality__telemetry")
    ok_s = time.monotonic() - stopped_at
    assert passed.returncode == 0, passed.output[-8000:]
    final = {p["partition"]: p["status"] for p in _latest_summary(home)["partitions"]}
    assert final == {p: "OK" for p in range(SHARDS)}
    # ... and tells a person once that the alarm is over, in the words of the first: what the alarm
    # task remembered between the two runs (an Airflow Variable) is what makes this message due.
    (_, mail), (_, post) = receivers.mails, receivers.posts
    unfolded = mail.text.replace("\r\n ", " ").replace("\n ", " ")
    assert f"Subject: [tidemark] telemetry: resolved: partition {FROZEN} OK (was STALL for " in unfolded
    assert post.body["notice"] == "resolved"
    assert [(p["partition"], p["status"], p["previous_status"]) for p in post.body["partitions"]] == [
        (FROZEN, "OK", "STALL")
    ]

    lake = read_lake(tmp_path)
    persisted = lake.persisted()
    twice = [position for position, times in persisted.items() if times > 1]
    assert not twice, f"{len(twice)} (shard, sequence) persisted more than once, e.g. {twice[:3]}"
    assert set(persisted) == {r.position for r in put}
    # G waited for shard 5 while it was frozen, so none of its records was late once read.
    assert (len(lake.rows["late"]), len(lake.rows["quarantine"])) == (0, 0)
    live = sorted(
        (row for row in lake.ledger if row["mode"] == "live"), key=lambda row: (row["step_id"], row["read_time"])
    )
    # G is unknown (null) until every shard has a watermark, then known in every row after.
    g = [_ms(row["global_watermark"]) for row in live]
    known = next(i for i, value in enumerate(g) if value is not None)
    assert None not in g[known:], "a live ledger row without G after G was known"
    g = g[known:]
    falls = [(a, b) for a, b in zip(g, g[1:]) if b < a]
    assert not falls, f"G decreased {len(falls)} times across the live ledger, e.g. {falls[:3]}"

    figures = {
        "command": COMMAND,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{sys.version.split()[0]} {sys.platform}",
        "shards": SHARDS,
        "frozen_shard": FROZEN,
        "records_put": len(put),
        "recovery_request": request,
        "frozen_shard_records": len(of_frozen),
        "recovered_by_the_request": len(in_request),
        "stop_to_failing_check_s": round(detected_s, 1),
        "stop_to_recovered_s": round(recovered_s, 1),
        "stop_to_all_ok_s": round(ok_s, 1),
        "event_time": {
            "stopped_at": _hour(stop_event_ms),
            "g_at_failing_check": None if g_at_check is None else _hour(g_at_check),
            "next_hour_sealed_once_g_reaches": _hour(next_hour_sealed_at_ms),
            "hours_sealed_at_failing_check": [_hour(h) for h in sealed_at_check],
            "g_after_recovery": _hour(g[-1]),
            "hours_sealed_after_recovery": [_hour(h) for h in _sealed_hours(tmp_path)],
        },
    }
    # The figures file is a benchmark's result: written when asked (TIDEMARK_WRITE_FIGURES=1), so a
    # suite run leaves the checkout as it found it.
    written = os.environ.get("TIDEMARK_WRITE_FIGURES") == "1"
    if written:
        FIGURES.write_text(json.dumps(figures, indent=2) + "\n")
    print(
        f"\nshard {FROZEN} of {SHARDS} frozen: failing check after {detected_s:.0f} s wall time (G unknown, no hour "
        f"sealed), recovered after {recovered_s:.0f} s, every shard OK after {ok_s:.0f} s; G then "
        f"{_hour(g[-1])}" + (f"; figures in {FIGURES.relative_to(REPO)}" if written else "")
    )
