"""The shipped telemetry stream (conf/streams.yaml) with its lake and checkpoints in a test's
folder: for tests that write a table themselves (deltalake) and read it as the stream's."""

from __future__ import annotations

from pathlib import Path

import yaml

from tidemark.stream_config import StreamConfig, load_stream

REPO = Path(__file__).resolve().parents[2]


def shipped_stream(tmp_path: Path) -> StreamConfig:
    """The telemetry stream, alone in ``tmp_path``/streams.yaml, its lake under ``tmp_path``."""
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"]["telemetry"]
    stream["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "cp")}
    document["streams"] = {"telemetry": stream}
    (tmp_path / "streams.yaml").write_text(yaml.safe_dump(document))
    return load_stream(tmp_path / "streams.yaml", "telemetry")
