"""A stream family: one stream per Kafka topic whose name matches a pattern, declared once.

    families:
      orders:
        match: 'orders\\..+'           # a topic is a member when its whole name matches ...
        exclude: ['orders\\.test']      # ... and no exclude pattern matches its whole name
        refresh: "*/5 * * * *"         # when the cluster's topics are listed again
        source: {kind: kafka, bootstrap_servers: "${KAFKA}", starting_offsets: latest}
        persist: {max_records_per_batch: 50000}

The keys other than ``match``, ``exclude``, ``refresh`` and ``max_drivers`` are a stream's keys (laid over
``defaults:`` like a declared stream's), without ``source.topic`` and ``source.partitions``: those
come from the family's cached listing (tidemark.topic_listing), which a refresh writes and every
parse reads. No broker is asked at parse time.

Before anything is checked, each member becomes an entry of ``streams:`` under its stream name
(given once, when the refresh first saw the topic: ``stream_name_for``), and so does the family's
template, ``family__<name>`` with a placeholder topic: the family's keys are checked even when
no topic matches yet, and the family's brokers are read from it. A problem in a key the family
wrote names the stream's key path and the family key it came from:
``streams.orders_eu.persist.schedule (from families.orders.persist.schedule)``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from tidemark.config_defaults import STREAMS, InheritedDocument, inherit_defaults
from tidemark.config_values import ConfigRuleError
from tidemark.topic_listing import ListedTopic, TopicListing

FAMILIES = "families"
# A family's own keys; every other key of its entry is a key of its member streams.
RULE_KEYS = ("match", "exclude", "refresh", "max_drivers")
# The source keys each member's topic fills in.
LISTED_KEYS = ("topic", "partitions")
TEMPLATE_PREFIX = "family__"
# The stream key that names a member's family: set here, never written in the file.
FAMILY_KEY = "family"
# A stream name: lower-case letters, digits and '_', starting with a letter, at most 63 characters.
_NAME_LENGTH = 63
_NOT_IN_NAME = re.compile(r"[^a-z0-9_]")
_FAMILY_NAME = re.compile(rf"^[a-z][a-z0-9_]{{0,{_NAME_LENGTH - len(TEMPLATE_PREFIX) - 1}}}$")


def topic_pattern(raw: object) -> str:
    """A regular expression over topic names (Python's ``re``), checked to compile."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"expected a regular expression over topic names, like 'orders\\..+', got {raw!r}")
    try:
        re.compile(raw)
    except re.error as error:
        raise ValueError(f"not a regular expression ({error}): {raw!r}") from None
    return raw


def template_name(family: str) -> str:
    """The stream name under which a family's own keys are checked."""
    return f"{TEMPLATE_PREFIX}{family}"


def stream_name_for(topic: str, taken: set[str] | frozenset[str]) -> str:
    """The stream name of a new member for ``topic``: the topic in lower case with every other
    character than a letter, digit or '_' made '_' (``orders.eu`` -> ``orders_eu``), ``t_`` before
    it when it does not start with a letter, and when that is in ``taken`` or too long, eight hex
    digits of the topic's SHA-1 after it (``orders_eu_1f0c…``), so a name is never given twice."""
    name = _NOT_IN_NAME.sub("_", topic.lower())
    if not name[:1].isalpha() or not name[:1].isascii():
        name = f"t_{name}"
    if len(name) <= _NAME_LENGTH and name not in taken:
        return name
    return f"{name[: _NAME_LENGTH - 9]}_{hashlib.sha1(topic.encode()).hexdigest()[:8]}"


def members_of(listing: TopicListing | None, match: str, exclude: tuple[str, ...]) -> tuple[ListedTopic, ...]:
    """The listed topics (missing ones included: their runs must fail and be seen) whose whole
    name matches ``match`` and no ``exclude`` pattern; none without a listing. Kafka's internal
    topics (``__consumer_offsets``) never are."""
    if listing is None:
        return ()
    included, excluded = re.compile(match), [re.compile(pattern) for pattern in exclude]
    return tuple(
        topic
        for topic in listing.topics
        if not topic.name.startswith("__")
        and included.fullmatch(topic.name)
        and not any(pattern.fullmatch(topic.name) for pattern in excluded)
    )


def declared_streams(document: Any, listing_of: Callable[[str], TopicListing | None]) -> InheritedDocument:
    """``document`` with each family's members and template added to ``streams`` (the family's
    entry keeping only its own keys), then ``defaults`` laid under every stream
    (tidemark.config_defaults). ``listing_of(family)`` reads a family's cached listing.

    Raises ConfigRuleError naming the family key that is wrong, or the stream whose name a member
    would take."""
    if not isinstance(document, dict) or not isinstance(document.get(FAMILIES), dict):
        return inherit_defaults(document)  # without families (or for the contract to refuse)
    document = dict(document)
    streams = document.get(STREAMS) or {}
    if not isinstance(streams, dict):
        return inherit_defaults(document)
    streams = dict(streams)
    for name, entry in streams.items():
        if isinstance(entry, dict) and FAMILY_KEY in entry:
            raise ConfigRuleError(
                f"{STREAMS}.{name}.{FAMILY_KEY}",
                "unknown key; a stream is a family's member by its topic, under families:",
            )
    origins: dict[tuple[str, ...], tuple[str, ...]] = {}
    rules: dict[str, dict] = {}
    for family, entry in document[FAMILIES].items():
        family = str(family)
        where = (FAMILIES, family)
        if not _FAMILY_NAME.match(family):
            raise ConfigRuleError(
                ".".join(where),
                "a family name must be lower-case letters, digits and '_', starting with a letter, "
                f"at most {_NAME_LENGTH - len(TEMPLATE_PREFIX)} characters",
            )
        entry = {} if entry is None else entry
        if not isinstance(entry, dict):
            raise ConfigRuleError(".".join(where), f"expected a mapping of keys, got {type(entry).__name__}")
        rule = {key: value for key, value in entry.items() if key in RULE_KEYS}
        rules[family] = rule
        own = {key: value for key, value in entry.items() if key not in RULE_KEYS}
        _refuse_listed_keys(own, where)
        match, exclude = _patterns(rule, where)
        listing = listing_of(family) if match is not None else None
        for name, placeholder in [(template_name(family), None), *_member_names(listing, match, exclude)]:
            if name in streams:
                raise ConfigRuleError(
                    f"{STREAMS}.{name}",
                    f"this name is also given to {_given_to(family, placeholder)}; rename the stream"
                    + ("" if placeholder is None else f" or exclude topic {placeholder.name!r} from the family"),
                )
            topic = placeholder.name if placeholder is not None else family
            partitions = placeholder.partitions if placeholder is not None else 1
            streams[name] = _member(own, topic, partitions, family)
            origins[(STREAMS, name)] = where
    document[FAMILIES] = rules
    document[STREAMS] = streams
    inherited = inherit_defaults(document)
    for family in rules:
        source = inherited.document[STREAMS][template_name(family)].get("source")
        kind = source.get("kind") if isinstance(source, dict) else None
        if kind is not None and kind != "kafka":
            raise ConfigRuleError(
                f"{FAMILIES}.{family}.source.kind",
                f"a family's members are the topics of a Kafka cluster, got {kind!r}; declare a {kind} stream "
                "under streams: instead",
            )
    return InheritedDocument(inherited.document, {**origins, **inherited.origins})


def _given_to(family: str, topic: ListedTopic | None) -> str:
    return f"family {family!r}'s template" if topic is None else f"family {family!r}'s member for topic {topic.name!r}"


def _member_names(listing: TopicListing | None, match: str | None, exclude: tuple[str, ...]):
    if match is None:
        return []
    return [(topic.stream, topic) for topic in members_of(listing, match, exclude)]


def _member(own: dict, topic: str, partitions: int, family: str) -> dict:
    """A member's entry: the family's keys, its source naming the topic and its partitions, and
    the family it belongs to."""
    member = {**own, FAMILY_KEY: family}
    source = member.get("source")
    member["source"] = {**(source if isinstance(source, dict) else {}), "topic": topic, "partitions": partitions}
    return member


def _refuse_listed_keys(own: dict, where: tuple[str, ...]) -> None:
    source = own.get("source")
    if isinstance(source, dict):
        for key in LISTED_KEYS:
            if key in source:
                raise ConfigRuleError(
                    ".".join((*where, "source", key)),
                    f"a family's members take their {key} from the cluster's listing of topics; remove this key",
                )
    for key in ("name", FAMILY_KEY):
        if key in own:
            raise ConfigRuleError(".".join((*where, key)), "unknown key; each member is named after its topic")


def _patterns(rule: dict, where: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """The family's ``match`` and ``exclude`` patterns, checked; ``match`` None when missing (the
    contract then says so)."""
    match = rule.get("match")
    if match is not None:
        try:
            match = topic_pattern(match)
        except ValueError as error:
            raise ConfigRuleError(".".join((*where, "match")), str(error)) from None
    exclude = rule.get("exclude") or ()
    if not isinstance(exclude, list | tuple):
        raise ConfigRuleError(".".join((*where, "exclude")), f"expected a list of patterns, got {exclude!r}")
    for index, pattern in enumerate(exclude):
        try:
            topic_pattern(pattern)
        except ValueError as error:
            raise ConfigRuleError(".".join((*where, "exclude", f"[{index}]")), str(error)) from None
    return match, tuple(exclude)
