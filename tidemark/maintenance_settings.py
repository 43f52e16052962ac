"""How a stream's lake is kept healthy as it ages: the optional ``maintenance:`` section.

    maintenance:
      schedule: "15 * * * *"     # cron (UTC) of the maintenance run (dags/tidemark_maintenance.py)
      compact_min_files: 4       # a sealed hour of events with at least this many files is compacted
      reader_timeout: 6h         # Airflow stops a task that reads the lake after this long
      vacuum_retain: 7d          # a file a commit removed is deleted this long after that commit

Compaction rewrites the files of sealed event-time hours only (an hour's records arrive until
it is sealed; after, only a recovery or a backfill adds to it, and a compaction that meets one
of their commits retries). It changes no data (Delta's OPTIMIZE commits ``dataChange=false``),
so no check, no damage scan and no reader sees a difference but the file count.

**The VACUUM rule.** VACUUM deletes the files that commits older than ``vacuum_retain`` removed
(a compaction's inputs, a recovery's rewritten files). A reader that opened a snapshot of the
table before such a commit reads those files until it finishes. Every reader of a stream's
lake runs as an Airflow task (the quality run, the sweep, a backfill comparing with live, the
offline-device detector), and Airflow stops each after ``reader_timeout`` (its
execution_timeout). So ``vacuum_retain`` must be longer than ``reader_timeout``: then no file a
running reader may still open is ever deleted. Loading the configuration enforces it, naming
``maintenance.vacuum_retain``. A run of the quality check or of the watermark page is seconds;
the bound is for the long ones.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from tidemark.config_values import ConfigRuleError, CronExpression, PositiveMilliseconds
from tidemark.duration import format_duration_ms

DAY_MS = 86_400_000
HOUR_MS = 3_600_000


class MaintenanceSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Compaction of sealed hours and VACUUM, on ``schedule``; durations in ms. The defaults here
    are also those of the optional section (Delta's own VACUUM default is 7 days)."""

    # Cron (UTC) of the maintenance run: compaction of sealed hours, then VACUUM.
    schedule: CronExpression = "15 * * * *"
    # A sealed hour of events with at least this many files is compacted into as few as Delta's target size allows.
    compact_min_files: Annotated[int, msgspec.Meta(ge=2)] = 4
    # Airflow stops a task reading the lake (quality, sweep, backfill, detector) after this long.
    reader_timeout_ms: PositiveMilliseconds = msgspec.field(default=6 * HOUR_MS, name="reader_timeout")
    # VACUUM deletes a removed file this long after the commit that removed it; must exceed reader_timeout.
    vacuum_retain_ms: PositiveMilliseconds = msgspec.field(default=7 * DAY_MS, name="vacuum_retain")

    def __post_init__(self):
        if self.vacuum_retain_ms <= self.reader_timeout_ms:
            raise ConfigRuleError(
                "vacuum_retain",
                f"{format_duration_ms(self.vacuum_retain_ms)} is not longer than maintenance.reader_timeout "
                f"{format_duration_ms(self.reader_timeout_ms)}: VACUUM could delete a file a reader that is still "
                "running opened; make vacuum_retain longer (Delta's default is 7d) or reader_timeout shorter",
            )
