"""A registry's Protobuf schema, as the registry holds it, into message types to decode with at
run time: no code generated ahead of time.

A registry holds a Protobuf schema in one of two forms, and ``ProtobufSchema.of`` takes both:

- ``.proto`` text, as Java producers and Confluent's REST API register it (and Apicurio
  returns it): compiled at run time by protoc itself, in-process (grpcio-tools' ``grpc_tools.
  protoc``), into a FileDescriptorProto. protoc is the reference compiler, so every schema a
  producer's build compiled compiles here the same way (options, maps, oneofs, proto2 and
  proto3, editions);
- a base64 serialized FileDescriptorProto, as confluent-kafka's Python serializer registers it
  and Confluent's registry returns it for ``?format=serialized``: parsed as it is.

Its references (the files it imports, each registered under its own subject) come compiled
first, in import order; Google's well-known types (Timestamp, wrappers, Struct...) are always
there, as every registry client assumes. The files go into a descriptor pool of the schema's
own, so two schemas that define the same name never meet. ``message_class(indexes)`` is the
class of the message the record's message-index path names, built once per path.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import (
    any_pb2,
    api_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    message_factory,
    source_context_pb2,
    struct_pb2,
    timestamp_pb2,
    type_pb2,
    wrappers_pb2,
)

# Google's well-known types: every registry client resolves their imports without a reference.
WELL_KNOWN = tuple(
    descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
    for module in (
        any_pb2,
        source_context_pb2,
        type_pb2,
        api_pb2,
        descriptor_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    )
)


class SchemaCompileError(ValueError):
    """A registered schema that is neither a serialized descriptor nor text protoc compiles; the
    message is protoc's own, naming the line."""


# protoc's logging library's own lines among its errors ("WARNING: All log messages before
# absl::InitializeLog()...", "W0000 00:00:... parser.cc:659] ..."): warnings, not why it refused.
_ABSL_LINE = re.compile(r"^(WARNING: All log messages before absl|[IWEF]\d{4} \d\d:\d\d:)")

# protoc writes its errors to the process's stderr: one compile at a time, so they can be read back.
_protoc_lock = threading.Lock()


def file_descriptor(name: str, schema: str, imports: Sequence[descriptor_pb2.FileDescriptorProto] = ()):
    """``schema`` (the registry's text: .proto source or a base64 serialized descriptor) as a
    FileDescriptorProto named ``name`` (the name its importers use; a serialized one keeps its
    own), compiled against ``imports`` (the files it imports, already compiled) and the
    well-known types. Raises SchemaCompileError."""
    serialized = _serialized(schema)
    if serialized is not None:
        return serialized
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory(prefix="tidemark-proto-") as folder:
        source = Path(folder, "src", name)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(schema, encoding="utf-8")
        given = descriptor_pb2.FileDescriptorSet(file=[*WELL_KNOWN, *imports])
        Path(folder, "imports.pb").write_bytes(given.SerializeToString())
        compiled, errors = Path(folder, "compiled.pb"), Path(folder, "errors.txt")
        arguments = [
            "protoc",
            f"--proto_path={Path(folder, 'src')}",
            f"--descriptor_set_in={Path(folder, 'imports.pb')}",
            f"--descriptor_set_out={compiled}",
            name,
        ]
        with _protoc_lock, _stderr_into(errors):
            status = protoc.main(arguments)
        if status != 0:
            report = errors.read_text(errors="replace").replace(str(Path(folder, "src")) + os.sep, "")
            message = "\n".join(line for line in report.splitlines() if line and not _ABSL_LINE.match(line))
            raise SchemaCompileError(message[:500] or f"protoc refused {name} (status {status})")
        (compiled_file,) = descriptor_pb2.FileDescriptorSet.FromString(compiled.read_bytes()).file
        return compiled_file


def _serialized(schema: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor a base64 serialized schema holds, or None when ``schema`` is not one (.proto
    text has spaces, quotes and semicolons, which strict base64 refuses)."""
    try:
        data = base64.b64decode(schema, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        parsed = descriptor_pb2.FileDescriptorProto.FromString(data)
    except Exception:  # noqa: BLE001 - a DecodeError: not a descriptor after all
        return None
    return parsed if parsed.name else None


class _stderr_into:
    """File descriptor 2 written into ``path`` for the block: protoc's C++ reports go there."""

    def __init__(self, path: Path):
        self._path = path

    def __enter__(self):
        import sys

        sys.stderr.flush()
        self._saved = os.dup(2)
        target = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, 2)
        os.close(target)

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)


class ProtobufSchema:
    """One registered Protobuf schema: its file and the files it imports, in a pool of their own.

    ``files``: the imported files in import order (each before its importers), then the schema's
    own file last."""

    def __init__(self, files: Sequence[descriptor_pb2.FileDescriptorProto]):
        pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()
        for file in (*WELL_KNOWN, *files):
            if file.name not in added:  # a file two references import arrives twice
                pool.Add(file)
                added.add(file.name)
        self._pool = pool
        self._file = files[-1]
        self._classes: dict[tuple[int, ...], Any] = {}

    def message_class(self, indexes: tuple[int, ...]):
        """The message class at ``indexes`` (an index into the file's messages in the order they
        are declared, then into that message's nested messages...); raises IndexError when the
        path names no message."""
        found = self._classes.get(indexes)
        if found is None:
            names, messages = [], self._file.message_type
            for index in indexes:
                if not 0 <= index < len(messages):
                    raise IndexError(index)
                names.append(messages[index].name)
                messages = messages[index].nested_type
            full_name = ".".join([self._file.package, *names] if self._file.package else names)
            descriptor = self._pool.FindMessageTypeByName(full_name)
            found = self._classes[indexes] = message_factory.GetMessageClass(descriptor)
        return found
