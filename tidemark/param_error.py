"""A run's param that is missing or wrong: the error every params form and CLI flag reports.

The message starts with "param '<name>': " and says what to write instead, so the Airflow task
that validates the params fails before any work with a line a person can act on.
"""

from __future__ import annotations


class ParamError(ValueError):
    def __init__(self, param: str, reason: str):
        super().__init__(f"param {param!r}: {reason}")
        self.param = param
        # The reason alone, for callers that name the param their own way (a CLI option).
        self.reason = reason
