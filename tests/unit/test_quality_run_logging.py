"""The quality run's task log: each structured line it writes is one JSON object, as the Spark
jobs' lines are (a person greps it, the CLI's run follower parses it)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The run's logging set up as its __main__ does, then one structured line and one library line.
_SCRIPT = """
import logging
from expectations.quality_run import configure_logging
configure_logging()
logging.getLogger("tidemark.quality").info(
    {"event": "quality_run_finished", "stream": "telemetry", "success": False, "statuses": {"0": "OK", "1": "STOP"}}
)
logging.getLogger("py4j.clientserver").warning('Closing down "%s" connection', "clientserver")
logging.getLogger("py4j.clientserver").info("callback chatter nobody reads")
"""


def _stderr_lines() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stderr.splitlines()


def test_a_structured_line_of_the_quality_run_is_one_json_object_with_its_fields():
    first, *_ = _stderr_lines()

    assert json.loads(first) == {
        "level": "INFO",
        "logger": "tidemark.quality",
        "event": "quality_run_finished",
        "stream": "telemetry",
        "success": False,
        "statuses": {"0": "OK", "1": "STOP"},
    }


def test_a_library_line_parses_too_and_py4j_chatter_at_info_is_held_back():
    lines = _stderr_lines()

    assert [json.loads(line) for line in lines[1:]] == [
        {"level": "WARNING", "logger": "py4j.clientserver", "msg": 'Closing down "clientserver" connection'}
    ]
