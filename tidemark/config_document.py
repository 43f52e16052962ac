"""Reading a configuration file into its typed contract: YAML, ``${VAR}`` references to the
environment, and a message that names the key path of whatever is wrong.

The contract (tidemark.stream_config's Structs) says what each key may hold; msgspec checks it.
This module adds only what a YAML file written by people needs on top:

- ``${VAR}`` (required) and ``${VAR:-default}`` in any string read the environment, so the
  embedded default and the full stack share one file; strings are stripped.
- An empty section (``quality:`` with nothing under it) is that section with its defaults; an
  empty key is an unset one.
- A mapping of named entries (``streams:``, ``payload.fields:``) becomes a tuple of Structs whose
  ``name`` field is the entry's key.
- A section that may be one of several kinds (``source:``: ``kind: kafka`` or ``kind: kinesis``,
  msgspec's tagged Structs) is read as the kind its tag names; a missing or unknown tag names the
  kinds there are.
- A Struct may refuse a key it does not declare with its own reason, through a classmethod
  ``refused_key(key) -> str | None`` (credentials in a source: say where they come from instead).
- An error names the file and the key path (``streams.telemetry.persist.max_records_per_batch``),
  says what the key may hold and shows what it holds (never the value of a refused key).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi
import yaml

from tidemark.config_defaults import InheritedDocument
from tidemark.config_values import ConfigRuleError

T = TypeVar("T")

# libyaml's safe loader when PyYAML was built with it (the wheels are): the same documents, read
# about ten times faster; every DAG file reads the whole file at every parse (200 streams: 0.47 s
# in Python's loader).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# msgspec's ValidationError says where as "<reason> - at `$.a.b[0].c`" (its documented form).
_AT = re.compile(r"(?P<reason>.*?)(?: - at `\$(?P<path>[^`]*)`)?", re.DOTALL)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<key>[^`]+)`")
_MISSING = re.compile(r"Object missing required field `(?P<key>[^`]+)`")


class StreamConfigError(ValueError):
    """A configuration value is missing, malformed or inconsistent; the message names the key."""


def read_config(
    path: str | Path,
    contract: type[T],
    environ: Mapping[str, str] | None = None,
    inherit: Callable[[Any], InheritedDocument] | None = None,
) -> T:
    """The file at ``path`` decoded into ``contract`` (a msgspec Struct). ``inherit`` lays a
    section of the file under others before anything is read (tidemark.config_defaults
    .inherit_defaults); a problem in a key it filled in also names where the key came from.

    Raises StreamConfigError "<file>: <key path>: <what is wrong>" on the first problem.
    """
    path = Path(path)
    try:
        document = yaml.load(path.read_text(), Loader=_SAFE_LOADER)
    except FileNotFoundError:
        raise StreamConfigError(f"{path}: stream configuration file not found (set TIDEMARK_CONF)") from None
    except yaml.YAMLError as error:
        raise StreamConfigError(f"{path}: not valid YAML: {error}") from None
    inherited = InheritedDocument(document, {})
    if inherit is not None:
        try:
            inherited = inherit(document)
        except ConfigRuleError as error:
            raise StreamConfigError(f"{path}: {error.key}: {error.reason}") from None
    root = mi.type_info(contract)
    preparation = _Preparation(str(path), os.environ if environ is None else environ, inherited)
    prepared = preparation.value(inherited.document, root, [])
    try:
        return msgspec.convert(prepared, contract, strict=False)
    except msgspec.ValidationError as error:
        raise StreamConfigError(_message(str(path), error, prepared, root, inherited)) from None


def with_environment(text: str, environ: Mapping[str, str]) -> str:
    """``text`` with its ``${VAR}`` and ``${VAR:-default}`` references read from ``environ``.
    Raises ConfigRuleError (key "") naming a required variable that is not set."""

    def substitute(match: re.Match) -> str:
        variable, default = match.group(1), match.group(2)
        if environ.get(variable, "") != "":
            return environ[variable]
        if default is not None:
            return default
        raise ConfigRuleError("", f"environment variable {variable} is not set (see `tidemark env`)")

    return _ENV_REF.sub(substitute, text)


class _Preparation:
    """The YAML document made ready for msgspec, walking it beside the contract's type."""

    def __init__(self, file: str, environ: Mapping[str, str], inherited: InheritedDocument):
        self._file = file
        self._environ = environ
        self._inherited = inherited

    def value(self, value: Any, info: mi.Type, where: list[str]) -> Any:
        from_config = _from_config(info)
        if from_config is not None and value is not None:
            written = self._text(value, where)
            try:
                return from_config(written)
            except ValueError as error:
                self._fail(where, str(error))
        struct = _struct(info) or _tagged_kind(info, value, self._fail, where)
        if isinstance(value, str):
            return self._text(value, where)
        if (struct is not None or _kinds(info)) and value is None:
            return {}
        if struct is not None and isinstance(value, dict):
            if struct.tag_field and struct.tag_field not in value:
                # msgspec takes a lone tagged Struct without its tag; the file must still say
                # which kind it means, so that a second kind can be added beside it.
                self._fail([*where, struct.tag_field], f"missing required key; expected {struct.tag!r}")
            fields = {f.encode_name: f for f in struct.fields}
            refused_key = getattr(struct.cls, "refused_key", None)
            for key in value:
                if key not in fields and key != struct.tag_field and refused_key and (reason := refused_key(key)):
                    self._fail([*where, str(key)], reason)
            return {
                key: self.value(item, fields[key].type, [*where, key]) if key in fields else item
                for key, item in value.items()
                if not (item is None and key in fields and _struct(fields[key].type) is None)
            }
        named = _named_item(info)
        if named is not None and isinstance(value, dict):
            return [self._named_entry(str(key), item, named, [*where, str(key)]) for key, item in value.items()]
        if isinstance(value, list):
            item_info = getattr(_unwrap(info), "item_type", info)
            return [self.value(item, item_info, where) for item in value]
        return value

    def _named_entry(self, name: str, entry: Any, info: mi.StructType, where: list[str]) -> Any:
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            self._fail(where, f"expected a mapping of keys, got {type(entry).__name__}")
        if "name" in entry:
            self._fail([*where, "name"], "unknown key; the entry's key above is its name")
        return {**self.value(entry, info, where), "name": name}

    def _text(self, value: Any, where: list[str]) -> Any:
        """Strings (also those of a list) with their environment references read, stripped."""
        if isinstance(value, list):
            return [self._text(item, where) for item in value]
        return self._interpolate(value, where).strip() if isinstance(value, str) else value

    def _interpolate(self, text: str, where: list[str]) -> str:
        try:
            return with_environment(text, self._environ)
        except ConfigRuleError as error:
            reason = error.reason
        self._fail(where, reason)  # outside the except: the message is the whole story

    def _fail(self, where: list[str], reason: str):
        raise StreamConfigError(f"{self._file}: {_key_path(where, self._inherited)}: {reason}")


def _key_path(where: list, inherited: InheritedDocument) -> str:
    """``a.b.c``, and where it came from when a section laid under it filled it in."""
    path = ".".join(str(part) for part in where) or "(top level)"
    origin = inherited.inherited_from(where)
    return f"{path} (from {origin})" if origin else path


def _message(
    file: str, error: msgspec.ValidationError, prepared: Any, root: mi.Type, inherited: InheritedDocument
) -> str:
    """'<file>: <key path>: <reason>' for a failed conversion."""
    match = _AT.fullmatch(str(error))
    segments = [int(index) if index else key for key, index in _SEGMENT.findall(match.group("path") or "")]
    where, value = _walk(prepared, segments)
    info = _info_at(root, segments, prepared)
    cause = error.__cause__
    if isinstance(cause, ConfigRuleError):
        where += [cause.key] if cause.key else []
        reason = cause.reason
    elif isinstance(cause, ValueError):  # another rule's own error names what is wrong
        reason = str(cause)
    elif unknown := _UNKNOWN.fullmatch(match.group("reason")):
        where.append(unknown.group("key"))
        reason = f"unknown key; expected one of {', '.join(_keys(_struct(info)))}"
    elif missing := _MISSING.fullmatch(match.group("reason")):
        where.append(missing.group("key"))
        expected = _info_at(root, [*segments, missing.group("key")], prepared)
        reason = (
            f"missing required {'section' if _struct(expected) or _kinds(expected) or _named_item(expected) else 'key'}"
        )
    else:
        shown = type(value).__name__ if _struct(info) is not None else repr(value)
        reason = f"expected {_describe(info)}, got {shown}"
    return f"{file}: {_key_path(where, inherited)}: {reason}"


def _walk(prepared: Any, segments: list) -> tuple[list[str], Any]:
    """The key path as the file writes it (a named entry by its name, not its position) and the
    value found there (None when there is none)."""
    path, value = [], prepared
    for segment in segments:
        found = isinstance(value, dict) and segment in value or isinstance(value, list) and isinstance(segment, int)
        value = value[segment] if found else None
        named = isinstance(segment, int) and isinstance(value, dict) and "name" in value
        path.append(value["name"] if named else f"[{segment}]" if isinstance(segment, int) else segment)
    return path, value


def _info_at(info: mi.Type, segments: list, prepared: Any) -> mi.Type | None:
    """The contract's type at a path of msgspec's error; a section of several kinds is the kind
    the prepared document's tag names there."""
    value = prepared
    for segment in segments:
        struct = _struct(info) or _tagged_kind(info, value)
        if isinstance(segment, int):
            info = getattr(_unwrap(info), "item_type", None)
        elif struct is not None and segment == struct.tag_field:
            info = mi.LiteralType(tuple(kind.tag for kind in _kinds(info)) or (struct.tag,))
        elif struct is not None:
            info = next((f.type for f in struct.fields if f.encode_name == segment), None)
        else:
            return None
        found = isinstance(value, dict) and segment in value or isinstance(value, list) and isinstance(segment, int)
        value = value[segment] if found and (isinstance(value, dict) or segment < len(value)) else None
    return _struct(info) or _tagged_kind(info, value) or info


def _kinds(info: mi.Type | None) -> tuple[mi.StructType, ...]:
    """The Structs of a section that may be one of several kinds (a union of tagged Structs)."""
    info = _unwrap(info)
    if not isinstance(info, mi.UnionType):
        return ()
    kinds = tuple(t for t in info.types if isinstance(t, mi.StructType) and t.tag_field)
    return kinds if len(kinds) == len([t for t in info.types if not isinstance(t, mi.NoneType)]) else ()


def _tagged_kind(info: mi.Type | None, value: Any, fail=None, where: list[str] = ()) -> mi.StructType | None:
    """The kind a mapping's tag names, of a section that may be one of several kinds; None when
    ``info`` is not such a section or ``value`` not a mapping. With ``fail``, a missing or unknown
    tag fails naming the kinds there are; without, it gives None."""
    kinds = _kinds(info)
    if not kinds or not isinstance(value, dict):
        return None
    tag_field = kinds[0].tag_field
    chosen = next((kind for kind in kinds if kind.tag == value.get(tag_field)), None)
    if chosen is None and fail is not None:
        expected = ", ".join(str(kind.tag) for kind in kinds)
        if tag_field not in value:
            fail([*where, tag_field], f"missing required key; expected one of {expected}")
        fail([*where, tag_field], f"expected one of {expected}, got {value[tag_field]!r}")
    return chosen


def _from_config(info: mi.Type | None):
    """How the file writes a value of this type (tidemark.config_values.written_as), or None."""
    info = _unwrap(info, keep_metadata=True)
    return info.extra.get("from_config") if isinstance(info, mi.Metadata) and info.extra else None


def _unwrap(info: mi.Type | None, keep_metadata: bool = False) -> mi.Type | None:
    """The type without None when it is optional, and without its metadata unless kept."""
    if isinstance(info, mi.UnionType):
        kept = [t for t in info.types if not isinstance(t, mi.NoneType)]
        info = kept[0] if len(kept) == 1 else info
    while isinstance(info, mi.Metadata) and not keep_metadata:
        info = info.type
    return info


def _struct(info: mi.Type | None) -> mi.StructType | None:
    info = _unwrap(info)
    return info if isinstance(info, mi.StructType) else None


def _named_item(info: mi.Type | None) -> mi.StructType | None:
    """The Struct of a mapping of named entries: a sequence of Structs that have a ``name`` field."""
    info = _unwrap(info)
    item = _struct(getattr(info, "item_type", None)) if isinstance(info, (mi.VarTupleType, mi.ListType)) else None
    return item if item is not None and any(f.encode_name == "name" for f in item.fields) else None


def _keys(struct: mi.StructType | None) -> list[str]:
    """The keys a section may hold, as the file writes them (a named entry's name is its key)."""
    if struct is None:
        return []
    keys = [f.encode_name for f in struct.fields if f.encode_name != "name"]
    return sorted([*keys, struct.tag_field] if struct.tag_field else keys)


def _describe(info: mi.Type | None) -> str:
    """What a key may hold, in the file's words."""
    info = _unwrap(info)
    if isinstance(info, mi.IntType):
        bounds = [f">= {info.ge}" if info.ge is not None else "", f"> {info.gt}" if info.gt is not None else ""]
        return " ".join(["a whole number", *filter(None, bounds)])
    if isinstance(info, mi.StrType):
        return "a non-empty string" if info.min_length else "a string"
    if isinstance(info, mi.BoolType):
        return "true or false"
    if isinstance(info, mi.LiteralType):
        return f"one of {', '.join(map(str, info.values))}"
    if _struct(info) is not None or _kinds(info):
        return "a mapping of keys"
    if _named_item(info) is not None:
        return "a mapping of named entries"
    if isinstance(info, mi.UnionType):
        return " or ".join(_describe(t) for t in info.types if not isinstance(t, mi.NoneType))
    return "a value of another kind"
