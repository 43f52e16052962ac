"""Where the persist job leaves the event-time feedback (spark_jobs.persist.pipeline._feedback_dir).

The folder of a remote checkpoint must be the same in every process that runs the stream: a
restarted job that named it differently would plan without its W_p feedback, and the old
folders would pile up. Python salts ``hash()`` of a string per process (PYTHONHASHSEED), so
the name is computed here in two processes with different seeds and compared."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKPOINT = "s3a://lake/checkpoints/telemetry/persist"

# Prints the feedback folder of a live run of the 'telemetry' stream whose checkpoint is on S3.
_PRINT_FOLDER = f"""
from types import SimpleNamespace
from spark_jobs.persist.pipeline import PersistRun, _feedback_dir
run = PersistRun(mode="live", trigger="available_now", checkpoint={CHECKPOINT!r}, max_records_per_batch=100)
print(_feedback_dir(SimpleNamespace(name="telemetry"), run))
"""


def _folder_in_process(hash_seed: str) -> str:
    environment = {**os.environ, "PYTHONHASHSEED": hash_seed, "TIDEMARK_HOME": "/var/tidemark"}
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_FOLDER], cwd=REPO, env=environment, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_remote_checkpoint_names_the_same_folder_in_every_process():
    digest = hashlib.sha256(CHECKPOINT.encode()).hexdigest()[:16]
    expected = f"/var/tidemark/feedback/telemetry/live/{digest}"
    first, second = _folder_in_process("1"), _folder_in_process("2")
    assert first == second
    assert first == expected


@pytest.mark.parametrize("checkpoint", ["/data/checkpoints/telemetry", "file:///data/checkpoints/telemetry"])
def test_a_local_checkpoint_keeps_the_feedback_beside_it(checkpoint):
    from types import SimpleNamespace

    from spark_jobs.persist.pipeline import PersistRun, _feedback_dir

    run = PersistRun(mode="live", trigger="available_now", checkpoint=checkpoint, max_records_per_batch=100)
    assert _feedback_dir(SimpleNamespace(name="telemetry"), run) == "/data/checkpoints/telemetry/_tidemark_feedback"
