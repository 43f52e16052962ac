"""The configuration reference (docs/reference/configuration.md), generated from the contract.

The contract is tidemark.stream_config's msgspec Structs: what each key of conf/streams.yaml may
hold, its default, and, as comments above or beside each field and as each Struct's docstring,
what it means. This module reads the types with ``msgspec.inspect`` and the comments with
``tokenize`` and ``ast`` (the Structs themselves stay as they are), so the page changes when the
contract does: tests/unit/test_config_reference.py fails while the committed page differs from
``render()``. ``tidemark config-reference --write`` writes it.
"""

from __future__ import annotations

import ast
import inspect
import io
import sys
import tokenize
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import msgspec
import msgspec.inspect as mi

from tidemark import config_values
from tidemark.alert_settings import EmailReceiver, connection_id, email_address, endpoint_path, recipients
from tidemark.config_defaults import DEFAULTS
from tidemark.duration import format_duration_ms, parse_duration_ms
from tidemark.stream_config import PayloadSchema, StreamsFile
from tidemark.stream_families import FAMILIES, topic_pattern

PAGE = Path("docs") / "reference" / "configuration.md"
COMMAND = "tidemark config-reference --write"

# How the file writes a value whose type reads it with a ``from_config`` function.
_WRITTEN_AS = {
    parse_duration_ms: "duration (`500ms`, `30s`, `10m`, `2h`, `7d`)",
    config_values.positive_duration_ms: "duration > 0 (`30s`, `10m`, `2h`)",
    config_values.memory_mib: "memory (`768m`, `2g`)",
    config_values.cron_expression: "cron, UTC (five fields or an Airflow preset)",
    config_values.aws_region: "AWS region code (`us-east-1`)",
    config_values.kinesis_stream_name: "Kinesis stream name",
    config_values.endpoint_url: "http(s) URL, no credentials",
    connection_id: "Airflow connection id",
    email_address: "e-mail address",
    recipients: "e-mail address, or a list of them",
    endpoint_path: "path below a base URL",
    topic_pattern: "regular expression over a topic's whole name (`orders\\..+`)",
}
# Fields whose Struct default only keeps the positional order: their validator requires them.
_REQUIRED_DESPITE_DEFAULT = {(PayloadSchema, "fields"), (EmailReceiver, "to")}


@dataclass(frozen=True)
class Row:
    """One key of the file: its path, what it holds, its default and what it means."""

    key: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    """A mapping of the file (a Struct) at ``path``: its rows and what the Struct's docstring says."""

    path: str
    anchor: str
    title: str
    doc: str
    rows: tuple[Row, ...]


def render() -> str:
    """The whole page, Markdown, ending with a newline."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated from tidemark/stream_config.py and tidemark/alert_settings.py by",
        f"     `{COMMAND}`; edit the Structs' comments, not this page. -->",
        "",
        "Every key `conf/streams.yaml` may hold, as the typed contract `tidemark/stream_config.py` declares it.",
        "A key not listed here fails loading, as does a value of the wrong kind; the message names the key path.",
        "Durations are written with a unit (`30s`, `10m`, `7d`) and held in milliseconds; any string may read",
        "the environment as `${VAR}` or `${VAR:-default}`. The rules that relate several keys are in the",
        "[configuration guide](../configuration.md).",
        "",
    ]
    for section in sections():
        # The key path as code, the kind after it as words: `streams.<name>.source` (kind: kafka).
        heading = f"`{section.path}`{section.title[len(section.path) :]}" if section.path else section.title
        lines += [f"## {heading} {{ #{section.anchor} }}", ""]
        if section.doc:
            lines += [section.doc, ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for row in section.rows:
            cells = (f"`{row.key}`", row.type, row.default, row.description)
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def sections() -> list[Section]:
    """Every Struct of the contract reachable from the file's top, in the order a reader meets them;
    the top also lists ``defaults`` (tidemark.config_defaults), read before the contract is."""
    found: list[Section] = []
    _walk(mi.type_info(StreamsFile), "", "", found)
    top = found[0]
    defaults = Row(
        DEFAULTS,
        "section: any keys of [`streams.<name>`](#streams-name)",
        "none",
        "What every stream inherits, key by key; a stream's own keys win. See "
        "[defaults](../configuration.md#defaults-keys-every-stream-shares).",
    )
    found[0] = replace(top, rows=(defaults, *top.rows))
    members = Row(
        "families.<name>.<stream key>",
        "any keys of [`streams.<name>`](#streams-name) but `source.topic` and `source.partitions`",
        "none",
        "The keys of every member stream, laid over `defaults` as a stream's own; each member's topic and its "
        "partitions come from the family's listing. See [families](../configuration.md#families-one-stream-per-topic).",
    )
    at = next(index for index, section in enumerate(found) if section.path == f"{FAMILIES}.<name>")
    found[at] = replace(found[at], rows=(*found[at].rows, members))
    return found


def _walk(info: mi.StructType, path: str, kind: str, found: list[Section]) -> str:
    """Adds the section of ``info`` at ``path`` (and those below it); returns its anchor."""
    anchor = (path.replace(".<name>", "-name").replace(".", "-") or "top") + (f"-{kind}" if kind else "")
    index = len(found)  # this section goes before the ones its fields add below it
    comments = _field_comments(info.cls)
    rows = []
    for field in info.fields:
        if path.endswith("<name>") and field.name == "name":
            continue  # the entry's key in the file is its name
        key = f"{path}.{field.encode_name}" if path else field.encode_name
        description = comments.get(field.name, "")
        type_text, below = _type_text(field.type, key, found)
        rows.append(Row(key, type_text + below, _default_text(info.cls, field), _markdown(description)))
    title = (path or "The file's top level") + (f" (kind: {kind})" if kind else "")
    found.insert(index, Section(path, anchor, title, _markdown(_docstring(info.cls)), tuple(rows)))
    return anchor


def _type_text(info: mi.Type, key: str, found: list[Section]) -> tuple[str, str]:
    """(how the file writes a value of ``info``, a link to the sections below it or "")."""
    optional = isinstance(info, mi.UnionType) and any(isinstance(t, mi.NoneType) for t in info.types)
    if optional:
        kept = [t for t in info.types if not isinstance(t, mi.NoneType)]
        info = kept[0] if len(kept) == 1 else mi.UnionType(tuple(kept))
    if isinstance(info, mi.StructType):
        return "section", f": [below](#{_walk(info, key, '', found)})"
    if isinstance(info, mi.UnionType) and all(isinstance(t, mi.StructType) for t in info.types):
        links = [f"[`{t.tag}`](#{_walk(t, key, t.tag, found)})" for t in info.types]
        return f"section; `{info.types[0].tag_field}`: one of", " " + ", ".join(links)
    if isinstance(info, mi.VarTupleType) and isinstance(info.item_type, mi.StructType):
        return "mapping of names to sections", f": [below](#{_walk(info.item_type, f'{key}.<name>', '', found)})"
    if isinstance(info, mi.VarTupleType):
        return f"list; each: {_scalar_text(info.item_type)}", ""
    return _scalar_text(info), ""


def _scalar_text(info: mi.Type) -> str:
    from_config = (getattr(info, "extra", None) or {}).get("from_config")
    if from_config is not None:
        return _WRITTEN_AS.get(from_config) or (inspect.getdoc(from_config) or from_config.__name__).split("\n")[0]
    if isinstance(info, mi.LiteralType):
        return "one of " + ", ".join(f"`{value}`" for value in sorted(info.values))
    if isinstance(info, mi.BoolType):
        return "boolean"
    if isinstance(info, mi.IntType):
        return "whole number" + (f" ≥ {info.ge}" if info.ge is not None else "")
    if isinstance(info, mi.StrType):
        return "string"
    raise TypeError(f"the configuration reference cannot describe {info!r}; add it to {__name__}")


def _default_text(cls: type, field: mi.Field) -> str:
    if (cls, field.name) in _REQUIRED_DESPITE_DEFAULT or (
        field.required and field.default is msgspec.NODEFAULT and field.default_factory is msgspec.NODEFAULT
    ):
        return "required"
    if field.default_factory is not msgspec.NODEFAULT:
        return "the section's defaults"
    value = field.default
    if value is None:
        return "unset"
    if value == ():
        return "none"
    from_config = _from_config(field.type)
    if from_config in (parse_duration_ms, config_values.positive_duration_ms):
        return f"`{format_duration_ms(value)}`"
    if from_config is config_values.memory_mib:
        return f"`{value}m`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int):
        return f"`{value}`"
    return f"`{value}`" if value else '`""`'


def _markdown(text: str) -> str:
    """Code comments as Markdown: ``x`` becomes `x`; a '<' outside code is shown, not read as HTML."""
    parts = text.replace("``", "`").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def _from_config(info: mi.Type):
    if isinstance(info, mi.UnionType):
        return next((f for f in map(_from_config, info.types) if f is not None), None)
    return (getattr(info, "extra", None) or {}).get("from_config")


def _docstring(cls: type) -> str:
    doc = cls.__dict__.get("__doc__") or ""
    return " ".join(inspect.cleandoc(doc).split()) if doc else ""


@cache
def _field_comments(cls: type) -> dict[str, str]:
    """Each field's comment in the Struct's source: the comment lines right above it, then the one
    after it on its line; a string right below it (an attribute docstring) counts too."""
    source = Path(sys.modules[cls.__module__].__file__).read_text()
    comments = {
        token.start[0]: (token.string.lstrip("#").strip(), token.line[: token.start[1]].strip() == "")
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    tree = ast.parse(source)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    found = {}
    for statement, following in zip(node.body, [*node.body[1:], None]):
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        above = []
        line = statement.lineno - 1
        while line in comments and comments[line][1]:
            above.insert(0, comments[line][0])
            line -= 1
        beside = [comments[statement.lineno][0]] if not comments.get(statement.lineno, ("", True))[1] else []
        docstring = []
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docstring = [" ".join(following.value.value.split())]
        found[statement.target.id] = " ".join([*above, *beside, *docstring])
    return found


def write(root: Path) -> Path:
    """Writes the page under ``root`` (the repository); returns its path."""
    path = root / PAGE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render())
    return path
