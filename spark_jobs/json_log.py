"""Structured logs for the Spark jobs: one JSON object per line (tidemark.structured_log, shared
with the quality run, which is no Spark job)."""

from tidemark.structured_log import JsonLineFormatter, configure_json_logging

__all__ = ["JsonLineFormatter", "configure_json_logging"]
