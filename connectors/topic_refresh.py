"""A family's topic listing refreshed: the brokers asked which topics there are
(connectors.kafka_topics), the listing (tidemark.topic_listing) written again, each new topic's
stream name given once, never one another stream or family has."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from connectors.kafka_topics import cluster_topics
from tidemark.kafka_access import KafkaAccess
from tidemark.listing_refresh_result import ListingRefreshResult
from tidemark.stream_config import StreamConfigError, read_streams_file
from tidemark.stream_families import members_of, stream_name_for, template_name
from tidemark.topic_listing import read_listing, refreshed, write_listing


def refresh_family(
    conf_path: str | Path,
    family: str,
    *,
    now_ms: int | None = None,
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> ListingRefreshResult:
    """List the topics of ``family``'s brokers (its source's ``kafka_conn_id`` secures the
    connection, read from ``environ``) and write its listing. Raises StreamConfigError for a
    family the file does not declare, KafkaUnavailableError/KafkaRefusedError when the brokers
    do not answer or refuse; the listing is then left as it was."""
    started = time.monotonic()
    declared = read_streams_file(conf_path, environ)
    if family not in declared.families:
        known = ", ".join(sorted(declared.families)) or "none"
        raise StreamConfigError(f"{conf_path}: no family named {family!r}; declared families: {known}")
    found = declared.families[family]
    source = found.template.source
    topics = cluster_topics(KafkaAccess.of(source.bootstrap_servers, source.kafka_conn_id, environ), timeout_s)
    taken = _names_taken_elsewhere(declared, family)
    previous = read_listing(found.listing_path)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    listing = refreshed(
        previous,
        family,
        source.bootstrap_servers,
        topics,
        now_ms,
        lambda topic, given: stream_name_for(topic, taken | given),
    )
    write_listing(found.listing_path, listing)
    members = members_of(listing, found.rule.match, found.rule.exclude)
    return ListingRefreshResult(
        family=family,
        bootstrap_servers=source.bootstrap_servers,
        listing_path=str(found.listing_path),
        refreshed_at_ms=now_ms,
        topics=len(listing.present()),
        members=tuple(topic.stream for topic in members),
        new=tuple(topic.stream for topic in members if topic.stream not in found.members),
        missing=tuple(topic.stream for topic in members if topic.missing_since_ms is not None),
        seconds=round(time.monotonic() - started, 2),
    )


def _names_taken_elsewhere(declared, family: str) -> set[str]:
    """Stream names ``family``'s new members may not have: the declared streams', every family's
    template's, and every name another family's listing has given (member or not: a pattern may
    change)."""
    taken = {template_name(name) for name in declared.families}
    members = {name for other in declared.families.values() for name in other.members}
    taken |= {name for name in declared.streams if name not in members}
    for name, other in declared.families.items():
        listing = read_listing(other.listing_path) if name != family else None
        taken |= {topic.stream for topic in listing.topics} if listing is not None else set()
    return taken
