"""A maintenance commit that loses to a concurrent writer retries, then yields
(spark_jobs.maintenance.conflict_retry), with Delta's own conflict classes and no Spark."""

from __future__ import annotations

import logging

import pytest
from delta.exceptions import ConcurrentAppendException, ConcurrentDeleteReadException

from spark_jobs.maintenance import conflict_retry
from spark_jobs.maintenance.conflict_retry import ATTEMPTS, retried


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    waits = []
    monkeypatch.setattr(conflict_retry.time, "sleep", waits.append)
    return waits


def _losing(times: int, loss: type[Exception] = ConcurrentDeleteReadException):
    """A commit that loses ``times`` times to a concurrent writer, then commits (returns its calls)."""
    calls = []

    def commit():
        calls.append(len(calls) + 1)
        if len(calls) <= times:
            raise loss("a concurrent transaction deleted a file this one read")
        return "committed"

    return commit, calls


def test_a_commit_that_loses_twice_commits_on_its_third_attempt_each_loss_one_warning(caplog, no_waiting):
    commit, calls = _losing(2)
    with caplog.at_level(logging.WARNING, logger="tidemark.maintenance"):
        value, retries = retried(commit, "compaction_conflict", {"stream": "s", "day": "2026-11-29"})
    assert (value, retries, calls) == ("committed", 2, [1, 2, 3])
    lines = [record.msg for record in caplog.records]
    assert [line["attempt"] for line in lines] == [1, 2]
    assert all(line["event"] == "compaction_conflict" and line["day"] == "2026-11-29" for line in lines)
    assert all(line["detail"].endswith("retrying") for line in lines)
    assert no_waiting == [0.5, 1.0]  # each wait twice the one before


def test_a_commit_that_always_loses_yields_after_every_attempt_and_says_so(caplog, no_waiting):
    commit, calls = _losing(ATTEMPTS + 1, ConcurrentAppendException)
    with caplog.at_level(logging.WARNING, logger="tidemark.maintenance"):
        value, retries = retried(commit, "settlement_conflict", {"stream": "s"})
    assert (value, retries, len(calls)) == (None, ATTEMPTS, ATTEMPTS)
    last = caplog.records[-1].msg
    assert last["attempt"] == ATTEMPTS and last["detail"].endswith("left for the next maintenance run")
    assert "ConcurrentAppendException" in last["detail"]


def test_any_other_failure_is_not_a_conflict_and_escapes_at_once(no_waiting):
    calls = []

    def commit():
        calls.append(1)
        raise OSError("the lake's disk is full")

    with pytest.raises(OSError, match="disk is full"):
        retried(commit, "compaction_conflict", {})
    assert calls == [1] and no_waiting == []
