"""The STREAM argument: a name from the stream configuration, checked before any work."""

from __future__ import annotations

import click

from tidemark.stream_config import StreamConfig, load_streams


def stream_argument(command):
    """Decorates ``command`` with an optional STREAM argument that arrives as its StreamConfig.

    Omitted, it is the configured stream when there is exactly one. An unknown name, or none
    given while several are configured, is a usage error (exit 2) that lists the known streams.
    A configuration file that does not validate raises StreamConfigError (exit 1, naming the key).
    """
    return click.argument("stream", required=False, metavar="[STREAM]", callback=_resolve)(command)


def configuration_path(ctx: click.Context) -> str:
    """The stream configuration the command reads: ``--conf``, or $TIDEMARK_CONF."""
    return ctx.find_root().params["conf"]


def _resolve(ctx: click.Context, _param: click.Parameter, name: str | None) -> StreamConfig:
    conf = configuration_path(ctx)
    streams = load_streams(conf)
    known = ", ".join(sorted(streams))
    if name is None:
        # A command may also take the stream as ``--stream`` (click handles the options given
        # before an argument that was not).
        name = ctx.params.get("stream_name")
    if name is None:
        if len(streams) == 1:
            return next(iter(streams.values()))
        raise click.BadParameter(
            f"name one of the configured streams: {known} (from {conf})", ctx, param_hint="'STREAM'"
        )
    if name not in streams:
        raise click.BadParameter(
            f"unknown stream {name!r}; the known streams are: {known} (configured in {conf})",
            ctx,
            param_hint="'STREAM'",
        )
    return streams[name]
