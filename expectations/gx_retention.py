"""How long the GX project keeps validation results and their Data Docs pages.

GX keeps every validation result it stores, and building Data Docs lists them all and reads the
index's: each quality run's Data Docs cost grows with every run before it. Measured on the aging
benchmark's project (one run checking 3 hours, GX 1.24.1, 2 cores): 177 stored results 1.1 s,
1,761 results 3.9 s (2.4 s with GX's ``validation_results_limit`` of 150 on the index, which
still lists every key). A stream checked every 10 minutes stores six results a run, about 860 a
day. So each run first deletes the results, and their pages, whose run time is older than
``quality.data_docs_keep``; tidemark's own records of every run (``summary.json`` and
``summary.html`` per run, one report per checked hour) are kept whole and stay the history.

Layout (GX 1.24's file stores): ``gx/uncommitted/validations/<suite path>/<run name>/<run
time>/<batch>.json`` and, for the site, ``gx/uncommitted/data_docs/local_site/validations/``
with the same path ending in ``.html``. A run time folder is named ``YYYYMMDDTHHMMSS.ffffffZ``
(UTC, GX's clock: the wall clock when the run validated).
"""

from __future__ import annotations

import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

_RUN_TIME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z$")


def result_folders(gx_root: Path) -> tuple[Path, ...]:
    """The folders that hold validation results and their pages in the project at ``gx_root``
    (the folder that holds ``great_expectations.yml``)."""
    uncommitted = gx_root / "uncommitted"
    return uncommitted / "validations", uncommitted / "data_docs" / "local_site" / "validations"


def prune_validation_results(gx_root: Path, older_than: datetime) -> int:
    """Delete every validation result and page whose run time is before ``older_than`` (aware,
    UTC), and the run folders they leave empty; the number of run times deleted (results and
    pages counted once each)."""
    results, pages = result_folders(gx_root)
    deleted = _prune(results, older_than)
    _prune(pages, older_than)
    return deleted


def _prune(folder: Path, older_than: datetime) -> int:
    if not folder.is_dir():
        return 0
    deleted = 0
    for parent, names, _ in os.walk(folder, topdown=True):
        for name in [n for n in names if _RUN_TIME.match(n)]:
            names.remove(name)  # never walk into a run time's own files
            if _run_time(name) < older_than:
                shutil.rmtree(Path(parent) / name, ignore_errors=True)
                deleted += 1
    _remove_empty_folders(folder)
    return deleted


def _run_time(name: str) -> datetime:
    return datetime.strptime(name, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)


def _remove_empty_folders(folder: Path) -> None:
    """Run-name and suite folders left empty, deepest first; ``folder`` itself stays."""
    for parent, _, _ in sorted(os.walk(folder), key=lambda entry: -len(entry[0])):
        if Path(parent) != folder and not os.listdir(parent):
            os.rmdir(parent)
