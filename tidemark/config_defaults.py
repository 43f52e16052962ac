"""A streams file's ``defaults:`` section: what every stream inherits, key by key.

    defaults:
      lake: {root: "${TIDEMARK_LAKE_ROOT}", checkpoint_root: "${TIDEMARK_CHECKPOINT_ROOT}"}
      retention: 7d
      persist: {schedule: "*/5 * * * *"}
    streams:
      orders:
        source: {kind: kafka, topic: orders, partitions: 12}
        persist: {max_records_per_batch: 50000}    # and the schedule above

Each stream's mapping is laid over a copy of ``defaults``, before anything is read or checked:

- a key the stream does not write is the default's, whole;
- where both are mappings, they merge the same way, key by key (a named entry of
  ``payload.fields`` too), except a section of another kind: a stream's ``source`` whose ``kind``
  differs from the default's replaces it whole;
- anything else the stream writes replaces the default's: a value, a list, and an empty key or
  section, which then means what it means without defaults (an unset key, a section with
  tidemark's own defaults). So a section in ``defaults`` that only some streams should have
  (``alerts``, ``offline_devices``) belongs on those streams instead.

Every stream is then checked as if it had written the inherited keys itself; a problem in one
of them names the stream's key path and where it came from
(``streams.orders.persist.schedule (from defaults.persist.schedule)``): ``inherited_from``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidemark.config_values import ConfigRuleError

DEFAULTS = "defaults"
STREAMS = "streams"
KIND = "kind"


@dataclass(frozen=True)
class InheritedDocument:
    """The document with ``defaults`` laid under every stream and the section removed.
    ``origins`` maps a key path the defaults filled in (``("streams", "orders", "retention")``)
    to the path it came from (``("defaults", "retention")``)."""

    document: Any
    origins: Mapping[tuple[str, ...], tuple[str, ...]]

    def inherited_from(self, where: list[str] | tuple[str, ...]) -> str | None:
        """``defaults.…`` for a key path at or under a key the defaults filled in, else None."""
        where = tuple(str(part) for part in where)
        for length in range(len(where), 0, -1):
            origin = self.origins.get(where[:length])
            if origin is not None:
                return ".".join((*origin, *where[length:]))
        return None


def inherit_defaults(document: Any) -> InheritedDocument:
    """``document`` (a streams file as YAML read it) with its ``defaults`` laid under each stream
    (see the module). Without a ``defaults`` section, the document as it is. Raises
    ConfigRuleError naming ``defaults`` when it is not a mapping of keys."""
    if not isinstance(document, dict) or DEFAULTS not in document:
        return InheritedDocument(document, {})
    document = dict(document)
    defaults = document.pop(DEFAULTS)
    if defaults is None:
        return InheritedDocument(document, {})
    if not isinstance(defaults, dict):
        raise ConfigRuleError(DEFAULTS, f"expected a mapping of keys, got {type(defaults).__name__}")
    streams = document.get(STREAMS)
    if not isinstance(streams, dict):  # the contract says what is wrong with it
        return InheritedDocument(document, {})
    origins: dict[tuple[str, ...], tuple[str, ...]] = {}
    document[STREAMS] = {
        name: _laid_over(defaults, {} if entry is None else entry, (STREAMS, str(name)), (DEFAULTS,), origins)
        for name, entry in streams.items()
    }
    return InheritedDocument(document, origins)


def _laid_over(default: dict, own: Any, where: tuple[str, ...], origin: tuple[str, ...], origins: dict) -> Any:
    """``own`` laid over ``default``, noting in ``origins`` each key ``default`` filled in."""
    if not isinstance(own, dict) or (KIND in own and KIND in default and own[KIND] != default[KIND]):
        return own
    merged = {}
    for key, value in default.items():
        if key not in own:
            merged[key] = copy.deepcopy(value)
            origins[(*where, str(key))] = (*origin, str(key))
        elif isinstance(value, dict):
            merged[key] = _laid_over(value, own[key], (*where, str(key)), (*origin, str(key)), origins)
        else:
            merged[key] = own[key]
    merged.update((key, value) for key, value in own.items() if key not in default)
    return merged
