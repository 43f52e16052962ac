"""What the jobs run for one request have in common (re-drive, erasure, accepting a loss): the
arguments (``--request`` a request value's JSON, ``--conf``, ``--result``) and the stream the
request names, checked before any work."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tidemark.stream_config import StreamConfig


def request_arguments(prog: str, description: str, request: str) -> argparse.ArgumentParser:
    """The job's parser: ``--request`` (``request``: what the JSON is, e.g. "a RedriveRequest's
    JSON (tidemark.redrive_request)"), ``--conf`` (default $TIDEMARK_CONF or conf/streams.yaml) and
    ``--result`` (where the result's JSON goes)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--request", required=True, help=request)
    parser.add_argument("--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"))
    parser.add_argument("--result", type=Path, help="write the run's result as JSON here")
    return parser


def requested_stream(streams: dict[str, StreamConfig], request) -> StreamConfig:
    """The configured stream ``request.stream`` names; the request's own ParamError naming
    ``stream`` when there is none."""
    if request.stream not in streams:
        raise request.error_type("stream", f"unknown stream {request.stream!r}")
    return streams[request.stream]
