"""A run's bad param, said as the CLI option the user typed: ``--end`` rather than "param 'end'"."""

from __future__ import annotations

import click

from tidemark.param_error import ParamError


def option_name(param: str) -> str:
    """The option that carries the DAG param ``param`` (``shadow_name`` → ``--shadow-name``)."""
    return "STREAM" if param == "stream" else "--" + param.replace("_", "-")


def usage_error(error: ParamError) -> click.BadParameter:
    """The usage error (exit 2) for a param the core's validation refused, with its reason."""
    return click.BadParameter(error.reason, param_hint=f"'{option_name(error.param)}'")
