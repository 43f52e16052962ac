"""connectors.persist_look against a real broker and a lake the persist job wrote: "nothing new"
after a run read everything, work as soon as one record arrives, and never "nothing new" when
the ledger or the log cannot be read."""

from __future__ import annotations

import shutil
import time

import pytest

from connectors.bounded_family_look import look_before_persisting_family_bounded
from connectors.family_look import look_before_persisting_family
from connectors.persist_look import look_before_persist
from harness.persist_job import produce, run_persist, telemetry_value, write_stream_config
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration


def test_the_look_finds_nothing_new_only_when_the_job_would_plan_nothing(kafka_broker, spark, tmp_path):
    topic = "persist_look"
    kafka_broker.create_topic(topic, 2)
    # Records of two hours ago: once read, both partitions are IDLE (quiet past idle_timeout).
    old = int(time.time() * 1000) - 7_200_000
    produce(kafka_broker.bootstrap, topic, [(i % 2, telemetry_value(f"d{i}", old + i), old + i) for i in range(20)])
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    stream = load_stream(conf, "telemetry")

    first = look_before_persist(stream)
    assert not first.nothing_new and "no live row" in first.reason

    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist.log")
    caught_up = look_before_persist(stream)
    assert caught_up.nothing_new, caught_up.reason
    assert "all 2 partitions (IDLE)" in caught_up.reason

    produce(kafka_broker.bootstrap, topic, [(1, telemetry_value("d", old), old)])
    grown = look_before_persist(stream)
    assert not grown.nothing_new
    assert grown.reason == "partition 1: the log ends at 11, past the ledger's offset 10"

    # A family's look in a process of its own (connectors.bounded_family_look) answers what the
    # look in this process answers; one that does not answer within its deadline is killed, and
    # every member is answered "run the job", saying why.
    now_ms = int(time.time() * 1000)
    assert look_before_persisting_family_bounded([stream], now_ms=now_ms) == look_before_persisting_family(
        [stream], now_ms=now_ms
    )
    stopped = look_before_persisting_family_bounded([stream], deadline_s=0.05)
    assert not stopped["telemetry"].nothing_new
    assert stopped["telemetry"].reason == "the look at the log did not answer within 0.05 s and was stopped"

    # A broker that does not answer: the job decides (and fails there, naming the broker).
    shutil.copytree(tmp_path / "lake", tmp_path / "away" / "lake")
    unreachable = load_stream(write_stream_config(tmp_path / "away", "127.0.0.1:9", topic, 2), "telemetry")
    away = look_before_persist(unreachable, log_timeout_s=2.0)
    assert not away.nothing_new and away.reason.startswith("the log did not answer")

    # A ledger whose log cannot be read: never "nothing new".
    log_folder = tmp_path / "lake" / "telemetry" / "ledger" / "_delta_log"
    newest = max(log_folder.glob("*.json"))
    broken = log_folder / f"{int(newest.stem) + 1:020d}.json"
    broken.write_text('{"add": {"path": ')
    unreadable = look_before_persist(stream)
    assert not unreadable.nothing_new and unreadable.reason.startswith("the ledger could not be read")
