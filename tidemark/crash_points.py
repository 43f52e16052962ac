"""Controlled crash points: a test's switch that makes a job die right after one named commit.

Exactly-once is argued commit by commit (spark_jobs.persist.batch: events, late, quarantine,
then seals and the ledger; recovery and a backfill into ``events`` MERGE; a backfill into a
shadow set appends to its own tables). Killing a job "somewhere" tests whichever moment the
kill happened to land on; a crash point names the moment:

    TIDEMARK_TEST_FAULTS=1 TIDEMARK_CRASH_AT='{"after": "late", "batch": 1}'

makes the job exit hard right after its second batch's commit to ``late``. ``after`` is one of
COMMITS: a table the batch commits to (in a shadow set, the shadow table of that name), the
run's ``claims`` commit (recovery and backfill into ``events``, made before any batch; ``batch``
is ignored), or ``before_first``: the batch has been read and planned, and nothing of it is
committed yet. ``batch`` counts the batches this run writes, from 0 (not Spark's batch id, which
goes on across runs of one checkpoint). A batch that makes no commit to the named table (no late
record, no hour sealed) never reaches the point: the run goes on, and the test that set it must
notice.

``action``: ``exit`` (the default) kills the driver's JVM and the Python process with SIGKILL,
as a lost machine would: no ``finally``, no shutdown hook. ``raise`` raises CrashPointReached out
of the commit instead, for tests that run a job inside their own process and cannot lose it.

Off in production: the variable is refused (CrashPointError at start-up, exit 2) unless
TIDEMARK_TEST_FAULTS=1 is set too, so a stray setting can never make a production job crash.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

CRASH_AT = "TIDEMARK_CRASH_AT"
TEST_FAULTS = "TIDEMARK_TEST_FAULTS"

BEFORE_FIRST = "before_first"
CLAIMS = "claims"
COMMITS = (BEFORE_FIRST, CLAIMS, "events", "late", "quarantine", "seals", "ledger")
ACTIONS = ("exit", "raise")


class CrashPointError(ValueError):
    """TIDEMARK_CRASH_AT is set where it may not be, or does not say a crash point."""


class CrashPointReached(RuntimeError):
    """Raised at a crash point whose action is ``raise``: it fails the batch, so Spark commits
    nothing of it, and the job ends with it. An Exception, not a BaseException: PySpark's
    ``foreachBatch`` bridge (py4j's callback server) hands only Exceptions back to the JVM; any
    other kills the callback thread and leaves the query waiting for an answer."""


class CrashPoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where the job dies: right after its commit ``after`` of the run's batch ``batch`` (0: the
    first batch this run writes); ``action``: ``exit`` or ``raise`` (see the module)."""

    after: str
    batch: int = 0
    action: str = "exit"

    def __post_init__(self):
        if self.after not in COMMITS:
            raise CrashPointError(f"'after' must be one of {', '.join(COMMITS)}; got {self.after!r}")
        if self.batch < 0:
            raise CrashPointError(f"'batch' must be 0 or more (the run's batches, from 0); got {self.batch}")
        if self.action not in ACTIONS:
            raise CrashPointError(f"'action' must be one of {', '.join(ACTIONS)}; got {self.action!r}")

    def is_at(self, batch: int | None, commit: str) -> bool:
        """Whether ``commit`` of the run's batch ``batch`` (None: a commit of the run, not of a
        batch: the claim) is this point."""
        if commit != self.after:
            return False
        return batch is None or batch == self.batch

    def to_json(self) -> str:
        """The value of TIDEMARK_CRASH_AT that says this point."""
        return msgspec.json.encode(self).decode()


def crash_point_from_environment(environ: Mapping[str, str]) -> CrashPoint | None:
    """The crash point TIDEMARK_CRASH_AT names, None when it is not set. Raises CrashPointError
    naming the variable when it is set without TIDEMARK_TEST_FAULTS=1 or says no crash point."""
    text = environ.get(CRASH_AT, "").strip()
    if not text:
        return None
    if environ.get(TEST_FAULTS) != "1":
        raise CrashPointError(
            f"{CRASH_AT} is set but {TEST_FAULTS} is not 1: crash points are a test's switch and make the job die on "
            f"purpose; unset {CRASH_AT} (production jobs never honour it)"
        )
    try:
        return msgspec.json.decode(text, type=CrashPoint)
    except msgspec.ValidationError as error:
        raise CrashPointError(f"{CRASH_AT}: {error} (expected e.g. {CrashPoint('events', 0).to_json()})") from None
    except msgspec.DecodeError as error:
        raise CrashPointError(
            f"{CRASH_AT} is not JSON ({error}); expected e.g. {CrashPoint('events', 0).to_json()}"
        ) from None
