"""Which records an erasure removes: equalities on the stream's payload columns, nothing else.

``tidemark erase --where "device_id = 'scooter-7'"`` takes a predicate a person writes, and the
erasure DAG takes it from a params form. It is read by this small grammar, never handed to Spark
as SQL: a SQL expression can call functions (``reflect`` reaches any static Java method), and a
form anyone who may trigger a DAG fills must not run code. The grammar is what erasure requests
say (the records of one person, one device, one account)::

    predicate := clause ("AND" clause)*
    clause    := column "=" literal | column "IN" "(" literal ("," literal)* ")"
    literal   := 'text' (a quote doubled inside: 'O''Brien') | integer | decimal | true | false

A column is a payload column of the stream (``payload.fields`` and ``payload.key_fields``), and
each literal must be of its column's type. The adapters build their filters from the parsed
value (Spark columns, a JSON path into a quarantined record's raw value), so nothing is quoted
or escaped anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

from tidemark.stream_config import PayloadField

Literal = str | int | float | bool

_TOKEN = re.compile(
    r"\s*(?:(?P<text>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<symbol>[=(),]))"
)


class ErasurePredicateError(ValueError):
    """The predicate does not parse, names a column the stream does not have, or a literal of
    another type than its column's; the message says which and what to write."""


class Clause(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``column`` equals one of ``values``."""

    column: str
    values: tuple[Literal, ...]


class ErasurePredicate(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Every clause holds (AND). ``text``: the predicate as the person wrote it, for reports."""

    text: str
    clauses: tuple[Clause, ...]

    def matches(self, record: dict) -> bool:
        """Whether a decoded record (column name → value) is one this predicate erases."""
        return all(record.get(clause.column) in clause.values for clause in self.clauses)


def parse_predicate(text: str, columns: Iterable[PayloadField]) -> ErasurePredicate:
    """``text`` read by the grammar above against the stream's payload ``columns``."""
    declared = {field.name: field for field in columns}
    tokens = _tokens(text)
    clauses, position = [], 0

    def take() -> tuple[str, str]:
        nonlocal position
        if position >= len(tokens):
            raise ErasurePredicateError(f"{text!r} ends too early: write column = 'value', joined by AND")
        position += 1
        return tokens[position - 1]

    while True:
        kind, column = take()
        if kind != "word" or column.upper() in ("AND", "IN"):
            raise ErasurePredicateError(f"{text!r}: expected a column name, found {column!r}")
        if column not in declared:
            raise ErasurePredicateError(
                f"{text!r}: {column!r} is not a payload column of the stream; its columns: {', '.join(declared)}"
            )
        kind, operator = take()
        if operator == "=":
            values = (_literal(take(), declared[column], text),)
        elif kind == "word" and operator.upper() == "IN":
            if take()[1] != "(":
                raise ErasurePredicateError(f"{text!r}: IN takes a list in brackets, e.g. IN ('a', 'b')")
            values = [_literal(take(), declared[column], text)]
            while (token := take())[1] == ",":
                values.append(_literal(take(), declared[column], text))
            if token[1] != ")":
                raise ErasurePredicateError(f"{text!r}: expected ',' or ')' in the IN list, found {token[1]!r}")
            values = tuple(dict.fromkeys(values))
        else:
            raise ErasurePredicateError(f"{text!r}: expected = or IN after {column!r}, found {operator!r}")
        clauses.append(Clause(column, values))
        if position == len(tokens):
            return ErasurePredicate(text.strip(), tuple(clauses))
        kind, word = take()
        if word.upper() != "AND":
            raise ErasurePredicateError(f"{text!r}: clauses are joined by AND (only), found {word!r}")


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ErasurePredicateError(f"{text!r}: cannot read from {text[position:].strip()[:20]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    if not tokens:
        raise ErasurePredicateError("the predicate is empty: write column = 'value', e.g. device_id = 'scooter-7'")
    return tokens


def _literal(token: tuple[str, str], field: PayloadField, text: str) -> Literal:
    kind, value = token
    wrong = ErasurePredicateError(f"{text!r}: {value!r} is not a {field.type} literal for {field.name!r}")
    if field.type == "string":
        if kind != "text":
            raise wrong
        return value[1:-1].replace("''", "'")
    if field.type == "boolean":
        if kind != "word" or value.lower() not in ("true", "false"):
            raise wrong
        return value.lower() == "true"
    if kind != "number" or (field.type in ("long", "int") and "." in value):
        raise wrong
    return float(value) if field.type == "double" else int(value)
