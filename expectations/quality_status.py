"""The quality statuses, for the checks: the vocabulary is the core's (tidemark/quality_status.py),
since the quality summary that carries them is read beyond the checks (the watermark page, the
alarms, the CLI)."""

from tidemark.quality_status import STATUS_ORDER, QualityStatus, worst

__all__ = ["STATUS_ORDER", "QualityStatus", "worst"]
