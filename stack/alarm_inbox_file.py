"""What the alarm inbox keeps: one JSON line per alarm received, in arrival order.

    {"received_at_ms": <ms since the epoch, UTC>, "alarm": <the webhook's JSON, as posted>}

Written by the inbox's server (stack.alarm_inbox_server), read by it for its page and by the
demo (tidemark_cli.incident) without the server: the file is the inbox.
"""

from __future__ import annotations

import json
from pathlib import Path

ALARMS_FILE = "alarms.jsonl"


def read_alarms(folder: Path) -> list[dict]:
    """Every alarm kept in ``folder``, oldest first; [] when none arrived yet. A last line cut
    short (the server writing it right now) is left for the next read."""
    try:
        text = (folder / ALARMS_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    alarms = []
    for line in text.splitlines():
        try:
            alarms.append(json.loads(line))
        except ValueError:
            continue
    return alarms
