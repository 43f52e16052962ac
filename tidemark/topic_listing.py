"""The cached listing of a Kafka cluster's topics that a stream family's members come from.

A family (tidemark.stream_families) is declared by a topic pattern. Asking the brokers which
topics match at every DAG parse would put a network call, and its failures, in the scheduler's
hot path; instead a refresh (``tidemark refresh-topics``, DAG ``tidemark_topics__<family>``) asks
on the family's schedule and writes what it found here, and every parse reads this file.

The listing holds every topic of the cluster (not only the matching ones): a changed pattern or
exclude list takes effect at the next parse without a refresh. A topic the cluster no longer
lists is kept, with ``missing_since``: its member keeps its DAGs, so its runs fail and raise its
alarm instead of the stream vanishing unseen; a person excludes it to retire it. Times are UTC
milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from tidemark.typed_file import write_typed_file


class ListedTopic(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One topic as the last refresh saw it. ``partitions``: its count then (kept from the last
    refresh that saw it, once it is missing). ``stream``: the name of the stream a member for it
    is, given once, when the topic is first seen (tidemark.stream_families.stream_name_for), and
    never changed: the stream's lake folder, checkpoint and DAGs are named by it."""

    name: str
    stream: str
    partitions: int
    first_seen_ms: int
    missing_since_ms: int | None = None


class TopicListing(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What one refresh found on one family's brokers, topics sorted by name."""

    family: str
    bootstrap_servers: str
    refreshed_at_ms: int
    topics: tuple[ListedTopic, ...] = ()

    def present(self) -> tuple[ListedTopic, ...]:
        """The topics the cluster listed at the last refresh."""
        return tuple(topic for topic in self.topics if topic.missing_since_ms is None)


class TopicListingError(ValueError):
    """A listing file that cannot be read; the message names it."""


def refreshed(
    previous: TopicListing | None,
    family: str,
    bootstrap_servers: str,
    topics_now: Mapping[str, int],
    now_ms: int,
    name_new: Callable[[str, set[str]], str],
) -> TopicListing:
    """The listing after a refresh that found ``topics_now`` (name -> partition count) at
    ``now_ms``. A topic seen before keeps its ``stream`` and ``first_seen_ms``; one no longer
    listed keeps its last partition count and is marked missing since now (or since when it first
    went missing); one listed again is present again. A new topic's stream name is
    ``name_new(topic, names given in this listing so far)``, in topic order. A listing of other
    brokers is not carried over: its topics are another cluster's."""
    before = {}
    if previous is not None and previous.bootstrap_servers == bootstrap_servers:
        before = {topic.name: topic for topic in previous.topics}
    given = {topic.stream for topic in before.values()}
    topics = []
    for name in sorted(set(before) | set(topics_now)):
        seen = before.get(name)
        if seen is None:
            stream = name_new(name, given)
            given.add(stream)
            topics.append(ListedTopic(name, stream, topics_now[name], now_ms))
        elif name in topics_now:
            topics.append(ListedTopic(name, seen.stream, topics_now[name], seen.first_seen_ms))
        else:
            missing_since = seen.missing_since_ms if seen.missing_since_ms is not None else now_ms
            topics.append(ListedTopic(name, seen.stream, seen.partitions, seen.first_seen_ms, missing_since))
    return TopicListing(family, bootstrap_servers, now_ms, tuple(topics))


def read_listing(path: str | Path) -> TopicListing | None:
    """The listing at ``path``; None when no refresh has written it yet. Raises
    TopicListingError naming the file when it is not a listing."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    try:
        return msgspec.json.decode(data, type=TopicListing)
    except msgspec.DecodeError as error:
        raise TopicListingError(
            f"{path}: not a topic listing ({error}); run `tidemark refresh-topics` to write it again"
        ) from None


def write_listing(path: str | Path, listing: TopicListing) -> None:
    """Write ``listing`` to ``path`` whole or not at all: a parse reading it meanwhile sees the
    old listing or the new one."""
    write_typed_file(path, listing, atomic=True)
