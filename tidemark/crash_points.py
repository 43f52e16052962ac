"""Controlled crash points: a test's switch that makes a job die, or pause, at one named moment.

Exactly-once is argued commit by commit (spark_jobs.persist.batch: events, late, quarantine,
then seals and the ledger; recovery and a backfill into ``events`` MERGE; a backfill into a
shadow set appends to its own tables). Killing a job "somewhere" tests whichever moment the
kill happened to land on; a crash point names the moment:

    TIDEMARK_TEST_FAULTS=1 TIDEMARK_CRASH_AT='{"after": "late", "batch": 1}'

makes the job exit hard right after its second batch's commit to ``late``. ``after`` is one of
POINTS: a table the batch commits to (in a shadow set, the shadow table of that name), the
run's ``claims`` commit (recovery and backfill into ``events``, made before any batch; ``batch``
is ignored), ``before_first``: the batch has been read and planned, and nothing of it is decided
or committed yet, or ``decided``: the batch has decided how it writes (the offsets it leaves out
because a recovery or backfill claimed them, plain append or insert-only) and committed nothing.
``batch`` counts the batches this run writes, from 0 (not Spark's batch id, which goes on across
runs of one checkpoint). A batch that makes no commit to the named table (no late record, no
hour sealed) never reaches the point: the run goes on, and the test that set it must notice.

``action``: ``exit`` (the default) kills the driver's JVM and the Python process with SIGKILL,
as a lost machine would: no ``finally``, no shutdown hook. ``raise`` raises CrashPointReached out
of the commit instead, for tests that run a job inside their own process and cannot lose it.
``pause`` stops the job there until the test lets it go on, to place another job's step exactly
between two of this one's (an interleaving): the job writes ``paused-<after>-<batch>`` into the
point's ``folder`` and waits for ``resume-<after>-<batch>`` to appear there (at most
PAUSE_LIMIT_S, then it raises CrashPointReached). Everything else of the job runs on meanwhile
(the live driver's beat among it: a paused job is alive).

The variable holds one point or a JSON list of them (a job paused at batch 1 and again at batch
3); of several ``exit`` or ``raise`` points the first reached ends the job.

Off in production: the variable is refused (CrashPointError at start-up, exit 2) unless
TIDEMARK_TEST_FAULTS=1 is set too, so a stray setting can never make a production job crash.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

CRASH_AT = "TIDEMARK_CRASH_AT"
TEST_FAULTS = "TIDEMARK_TEST_FAULTS"

BEFORE_FIRST = "before_first"
DECIDED = "decided"
CLAIMS = "claims"
POINTS = (BEFORE_FIRST, DECIDED, CLAIMS, "events", "late", "quarantine", "seals", "ledger")
ACTIONS = ("exit", "raise", "pause")

# How long a paused job waits to be resumed (seconds): far longer than any test step, short
# enough that a test that forgot to resume it does not hang the suite.
PAUSE_LIMIT_S = 600.0


class CrashPointError(ValueError):
    """TIDEMARK_CRASH_AT is set where it may not be, or does not say a crash point."""


class CrashPointReached(RuntimeError):
    """Raised at a crash point whose action is ``raise`` (or a pause never resumed): it fails the
    batch, so Spark commits nothing of it, and the job ends with it. An Exception, not a
    BaseException: PySpark's ``foreachBatch`` bridge (py4j's callback server) hands only
    Exceptions back to the JVM; any other kills the callback thread and leaves the query waiting
    for an answer."""


class CrashPoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where the job dies or pauses: right after its point ``after`` of the run's batch ``batch``
    (0: the first batch this run writes); ``action``: ``exit``, ``raise`` or ``pause`` (see the
    module); ``folder``: where a ``pause`` says it paused and is told to resume."""

    after: str
    batch: int = 0
    action: str = "exit"
    folder: str = ""

    def __post_init__(self):
        if self.after not in POINTS:
            raise CrashPointError(f"'after' must be one of {', '.join(POINTS)}; got {self.after!r}")
        if self.batch < 0:
            raise CrashPointError(f"'batch' must be 0 or more (the run's batches, from 0); got {self.batch}")
        if self.action not in ACTIONS:
            raise CrashPointError(f"'action' must be one of {', '.join(ACTIONS)}; got {self.action!r}")
        if (self.action == "pause") != bool(self.folder):
            raise CrashPointError("'folder' is where a pause waits to be resumed: give it for a pause, and only then")

    def is_at(self, batch: int | None, point: str) -> bool:
        """Whether ``point`` of the run's batch ``batch`` (None: a point of the run, not of a
        batch: the claim) is this point."""
        if point != self.after:
            return False
        return batch is None or batch == self.batch

    @property
    def paused_file(self) -> str:
        """The file a ``pause`` writes when it has paused (its JSON: the process id)."""
        return f"{self.folder}/paused-{self.after}-{self.batch}"

    @property
    def resume_file(self) -> str:
        """The file that lets a ``pause`` go on once it exists."""
        return f"{self.folder}/resume-{self.after}-{self.batch}"

    def to_json(self) -> str:
        """The value of TIDEMARK_CRASH_AT that says this point."""
        return msgspec.json.encode(self).decode()


def points_to_json(points: tuple[CrashPoint, ...]) -> str:
    """The value of TIDEMARK_CRASH_AT that says all of ``points``."""
    return msgspec.json.encode(points).decode()


def crash_points_from_environment(environ: Mapping[str, str]) -> tuple[CrashPoint, ...]:
    """The crash points TIDEMARK_CRASH_AT names (one, or a list), () when it is not set. Raises
    CrashPointError naming the variable when it is set without TIDEMARK_TEST_FAULTS=1 or says
    no crash point."""
    text = environ.get(CRASH_AT, "").strip()
    if not text:
        return ()
    if environ.get(TEST_FAULTS) != "1":
        raise CrashPointError(
            f"{CRASH_AT} is set but {TEST_FAULTS} is not 1: crash points are a test's switch and make the job die on "
            f"purpose; unset {CRASH_AT} (production jobs never honour it)"
        )
    expected = f"expected e.g. {CrashPoint('events', 0).to_json()}, or a list of such points"
    try:
        if text.startswith("["):
            return msgspec.json.decode(text, type=tuple[CrashPoint, ...])
        return (msgspec.json.decode(text, type=CrashPoint),)
    except msgspec.ValidationError as error:
        raise CrashPointError(f"{CRASH_AT}: {error} ({expected})") from None
    except msgspec.DecodeError as error:
        raise CrashPointError(f"{CRASH_AT} is not JSON ({error}); {expected}") from None
