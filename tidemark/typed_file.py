"""A typed value (a msgspec Struct) as a file a person can open: indented JSON ending in a newline,
its folder created, written whole or not at all when asked. Readers decode it with the value's own
type (msgspec.json.decode(data, type=...)), each naming the file in its own error."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec


def encode_indented(value: msgspec.Struct) -> bytes:
    """``value`` as indented JSON, ending in a newline."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n"


def write_typed_file(path: str | Path, value: msgspec.Struct, *, atomic: bool = False) -> None:
    """Write ``value`` to ``path``, creating its folder. ``atomic``: through a partial file and a
    rename, so a reader (or a crash) never sees half of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not atomic:
        path.write_bytes(encode_indented(value))
        return
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(encode_indented(value))
    os.replace(partial, path)
