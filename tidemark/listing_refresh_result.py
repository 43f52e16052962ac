"""What one refresh of a family's topic listing found (connectors.topic_refresh), as one value: the
task's XCom and the CLI's output (tidemark.result_value)."""

from __future__ import annotations

from tidemark.result_value import ResultValue


class ListingRefreshResult(ResultValue, frozen=True):
    """The refresh of family ``family`` at ``refreshed_at_ms`` (UTC ms): ``topics`` the brokers
    listed, the family's ``members`` now (stream names), those that are ``new`` since the last
    refresh (persisted from their ``source.starting_offsets`` by their next run) and those whose
    topic is ``missing`` (deleted: their runs fail and raise their alarm until the topic is
    excluded). ``seconds``: how long the refresh took."""

    family: str
    bootstrap_servers: str
    listing_path: str
    refreshed_at_ms: int
    topics: int
    members: tuple[str, ...]
    new: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for a person."""
        line = f"family {self.family}: {self.topics} topics on {self.bootstrap_servers}, {len(self.members)} members"
        if self.new:
            line += f"; new: {', '.join(self.new)}"
        if self.missing:
            line += f"; topic gone (runs fail until excluded): {', '.join(self.missing)}"
        return f"{line} (listed in {self.seconds:.1f} s, written to {self.listing_path})"
