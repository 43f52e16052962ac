"""What a claimer does about the live job's batch in flight (tidemark.live_batch_wait): proceed
once it committed, wait while the live driver beats, yield when it cannot commit. A manual clock."""

from __future__ import annotations

from tidemark.live_batch_wait import (
    MAX_WAIT_MS,
    SILENT_BEATS,
    DriverBeat,
    LiveBatchWait,
    LiveBatchYield,
    Verdict,
)

INTERVAL_MS = 5_000


def _beat(number: int, run: str = "run-a", stopped: bool = False) -> DriverBeat:
    return DriverBeat(run, number, INTERVAL_MS, stopped)


def test_a_committed_batch_lets_the_claimer_proceed():
    wait = LiveBatchWait(batch=7, started_ms=0)
    assert wait.decide(0, pending=None, beat=_beat(1)).verdict is Verdict.PROCEED
    assert wait.decide(0, pending=8, beat=_beat(1)).verdict is Verdict.PROCEED, "a newer batch: 7 committed"


def test_while_the_driver_beats_the_claimer_waits_and_proceeds_once_the_batch_commits():
    wait = LiveBatchWait(batch=7, started_ms=0)
    for step in range(20):  # 100 s of beats, one every interval, the batch still in flight
        now = step * INTERVAL_MS
        assert wait.decide(now, pending=7, beat=_beat(step + 1)).verdict is Verdict.WAIT
    decision = wait.decide(100_500, pending=None, beat=_beat(21))
    assert decision.verdict is Verdict.PROCEED
    assert decision.reason == "the live job committed batch 7 (100.5 s)"


def test_a_driver_silent_for_three_intervals_is_gone_and_the_claimer_yields_then():
    wait = LiveBatchWait(batch=7, started_ms=1_000)
    assert wait.decide(1_000, pending=7, beat=_beat(40)).verdict is Verdict.WAIT  # first seen at 1,000 ms
    silent_until = 1_000 + SILENT_BEATS * INTERVAL_MS
    assert wait.decide(silent_until - 1, pending=7, beat=_beat(40)).verdict is Verdict.WAIT
    decision = wait.decide(silent_until, pending=7, beat=_beat(40))
    assert decision.verdict is Verdict.YIELD
    assert decision.reason == (
        "the live job's driver (run run-a) has not beaten for 15.0 s (every 5 s while it runs): "
        "it died or its machine is gone"
    )


def test_a_beat_that_moves_resets_the_silence_and_a_new_run_counts_as_a_move():
    wait = LiveBatchWait(batch=7, started_ms=0)
    assert wait.decide(0, pending=7, beat=_beat(3)).verdict is Verdict.WAIT
    assert wait.decide(14_000, pending=7, beat=_beat(3)).verdict is Verdict.WAIT
    assert wait.decide(14_500, pending=7, beat=_beat(4)).verdict is Verdict.WAIT  # moved: silent from here
    assert wait.decide(29_000, pending=7, beat=_beat(4)).verdict is Verdict.WAIT
    # The killed run's last beat was 4; a new run (its retry) starts counting from 1: alive.
    assert wait.decide(29_400, pending=7, beat=_beat(1, run="run-b")).verdict is Verdict.WAIT
    assert wait.decide(44_399, pending=7, beat=_beat(1, run="run-b")).verdict is Verdict.WAIT
    assert wait.decide(44_400, pending=7, beat=_beat(1, run="run-b")).verdict is Verdict.YIELD


def test_no_beat_or_a_stopped_run_yields_at_once():
    nobody = LiveBatchWait(batch=3, started_ms=0).decide(0, pending=3, beat=None)
    assert nobody.verdict is Verdict.YIELD
    assert nobody.reason == "the live job is not running: no run has beaten since the one that planned batch 3"
    stopped = LiveBatchWait(batch=3, started_ms=0).decide(0, pending=3, beat=_beat(9, stopped=True))
    assert stopped.verdict is Verdict.YIELD
    assert stopped.reason == "the live job's run run-a stopped without committing the batch"


def test_a_driver_that_beats_but_never_commits_is_waited_for_max_wait_then_yielded_to():
    wait = LiveBatchWait(batch=7, started_ms=0)
    now, beat = 0, 0
    while now < MAX_WAIT_MS:
        beat += 1
        assert wait.decide(now, pending=7, beat=_beat(beat)).verdict is Verdict.WAIT
        now += INTERVAL_MS
    decision = wait.decide(MAX_WAIT_MS, pending=7, beat=_beat(beat + 1))
    assert decision.verdict is Verdict.YIELD
    assert decision.reason == "the live job's driver runs but has not committed the batch in 300 s: it is stuck"


def test_the_yield_says_in_one_line_what_was_claimed_and_what_happens_next():
    yielded = LiveBatchYield(7, "/ck/telemetry/persist", {"0": ((100, 150), (160, 170))}, "it died", 15.2)
    assert yielded.sentence("recovery") == (
        "the live job's batch 7 reads offsets this recovery claimed (partition 0: [100, 150), [160, 170)) and it "
        "died. Nothing was written but the claim: the live job's next run replays the batch without the claimed "
        "offsets, and the next run of this recovery writes them"
    )
