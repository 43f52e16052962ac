"""stack.daemon.Daemon.stop ends what the daemon started, also a descendant that leads a process
group of its own (as Airflow's task processes do), with real processes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from stack.daemon import Daemon, _is_alive

# The daemon starts a child in a new session (its own process group), writes the child's pid,
# and waits; the child ignores nothing and sleeps.
SCRIPT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(300)
"""


def test_stop_ends_a_descendant_that_left_the_daemons_process_group(tmp_path: Path):
    daemon = Daemon("sleeper", tmp_path / "sleeper.pid", tmp_path / "sleeper.log", marker="tidemark-sleeper")
    child_pid_file = tmp_path / "child.pid"
    daemon.launch([sys.executable, "-c", SCRIPT, str(child_pid_file), "tidemark-sleeper"], os.environ, tmp_path)
    deadline = time.monotonic() + 30
    while not child_pid_file.is_file() or not child_pid_file.read_text():
        assert time.monotonic() < deadline, daemon.log_tail()
        time.sleep(0.1)
    child = int(child_pid_file.read_text())
    assert os.getpgid(child) != os.getpgid(daemon.pid())  # it left the daemon's group

    assert daemon.stop(timeout_s=10)

    deadline = time.monotonic() + 10
    while _is_alive(child):
        assert time.monotonic() < deadline, f"process {child} outlived the daemon's stop"
        time.sleep(0.1)
