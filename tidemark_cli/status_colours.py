"""The colour of a partition's status, the same in every table the CLI prints.

Reader statuses (ACTIVE, IDLE) and quality statuses (OK < WARN < LAGGING < STALL < STOP < HOLE <
LOST, expectations/quality_status.py) share one scale: calm colours for a partition that is
fine, warmer ones as it gets worse, and a filled background for those that need a person now.
Rich drops the colours when the output is not a terminal or NO_COLOR is set.
"""

from __future__ import annotations

from rich.text import Text

STATUS_STYLES = {
    "NO LEDGER ROWS": "dim",  # tidemark.stream_overview.NO_LEDGER: the live job has not read it yet
    "NOT CHECKED": "dim",  # tidemark.stream_glance.NOT_CHECKED: no quality check has completed yet
    "ACTIVE": "green",
    "IDLE": "cyan",
    "OK": "bold green",
    "WARN": "bold yellow",
    "LAGGING": "bold dark_orange",
    "STALL": "bold red",
    "STOP": "bold white on red",
    "HOLE": "bold white on magenta",
    "LOST": "bold white on purple4",
}


def status_text(status: str) -> Text:
    """``status`` in its colour; a status this table does not know is shown plain, never hidden."""
    return Text(status, style=STATUS_STYLES.get(status.upper(), ""))
