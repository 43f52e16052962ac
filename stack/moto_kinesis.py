"""moto's server with Kinesis resharding as Kinesis does it: the loopback Kinesis of the dev stack.

``python -m stack.moto_kinesis -H 127.0.0.1 -p PORT`` takes moto_server's arguments and runs it
(stack.loopback_kinesis starts it so). Dev stack and tests only: production never imports this.

moto 5.2.5 reshards unlike Kinesis in three ways, each of which would make a reader that keeps
Kinesis's rules (children only after their parents, every record once) look wrong:

1. Routing. moto picks the first shard whose hash range holds the key, closed ones included, so
   after a split or merge new records keep landing in the closed parent and the children stay
   empty. Kinesis routes only to open shards (a closed shard takes no records); its hash ranges
   include their EndingHashKey, which moto's excludes.
2. Split. moto empties the parent and puts its records again through routing, with new sequence
   numbers and arrival times. Kinesis leaves the parent's records where they are, readable until
   they expire; the children start empty.
3. Merge. moto copies both parents' records into the child, so a reader of parents and child
   gets each of them twice. Kinesis's child starts empty.

The patch is tied to moto==5.2.5 (pyproject.toml pins it): start-up fails, naming what is
missing, on another version or when a patched function or Shard attribute is gone. moto's own
argument checks and shard bookkeeping still run; split and merge set the parents' records aside
while moto's code runs (so it has nothing to move) and give them back. Everything else is moto as
it ships: small integer sequence numbers, NextShardIterator kept on closed shards, any
credentials accepted, requests served on threads without locks (a concurrent reader may see a
shard mid-reshard, as with moto alone).
"""

from __future__ import annotations

import hashlib
import sys
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

MOTO_VERSION = "5.2.5"


class MotoInternalsChanged(RuntimeError):
    """The installed moto is not the one this patch was written against."""


def patch_resharding() -> None:
    """Make moto's Kinesis streams route and reshard as Kinesis does (the three corrections above).

    Raises MotoInternalsChanged when moto is not 5.2.5 or lacks what is patched."""
    import moto
    from moto.kinesis import models

    if moto.__version__ != MOTO_VERSION:
        raise MotoInternalsChanged(
            f"stack.moto_kinesis patches moto {MOTO_VERSION}'s Kinesis resharding, but moto {moto.__version__} "
            f"is installed: reinstall the test extra (`.venv/bin/pip install -e '.[test]'`), or check the "
            f"three corrections in stack/moto_kinesis.py against the new moto and update MOTO_VERSION"
        )
    missing = [f"Stream.{name}" for name in _PATCHED if not callable(getattr(models.Stream, name, None))]
    probe = models.Shard(0, 0, 1)
    missing += [f"Shard.{name}" for name in _SHARD_ATTRIBUTES if not hasattr(probe, name)]
    if missing:
        raise MotoInternalsChanged(
            f"moto {moto.__version__} has no {', '.join(missing)}: stack.moto_kinesis cannot correct its Kinesis "
            "resharding; check the corrections in stack/moto_kinesis.py against this moto"
        )
    moto_routing, moto_split, moto_merge = (getattr(models.Stream, name) for name in _PATCHED)

    def get_shard_for_key(self, partition_key: str, explicit_hash_key: str):
        moto_routing(self, partition_key, explicit_hash_key)  # moto's checks of the key; its answer may be closed
        key = (
            int(explicit_hash_key)
            if explicit_hash_key
            else int(hashlib.md5(partition_key.encode("utf-8"), usedforsecurity=False).hexdigest(), 16)
        )
        return next(
            (s for s in self.shards.values() if s.is_open and s.starting_hash <= key <= s.ending_hash),
            None,
        )

    def split_shard(self, shard_to_split: str, new_starting_hash_key: str) -> None:
        with _records_set_aside(self, [shard_to_split]):
            moto_split(self, shard_to_split, new_starting_hash_key)

    def merge_shards(self, shard_to_merge: str, adjacent_shard_to_merge: str) -> None:
        with _records_set_aside(self, [shard_to_merge, adjacent_shard_to_merge]):
            moto_merge(self, shard_to_merge, adjacent_shard_to_merge)

    models.Stream.get_shard_for_key = get_shard_for_key
    models.Stream.split_shard = split_shard
    models.Stream.merge_shards = merge_shards


_PATCHED = ("get_shard_for_key", "split_shard", "merge_shards")
_SHARD_ATTRIBUTES = ("records", "is_open", "starting_hash", "ending_hash")


@contextmanager
def _records_set_aside(stream, shard_ids: Iterable[str]) -> Iterator[None]:
    """The named shards hold no records inside the block and get theirs back after it, raised or not."""
    shards = [stream.shards[shard_id] for shard_id in dict.fromkeys(shard_ids) if shard_id in stream.shards]
    kept = [(shard, shard.records) for shard in shards]
    for shard in shards:
        shard.records = OrderedDict()
    try:
        yield
    finally:
        for shard, records in kept:
            shard.records = records


def main(argv: list[str] | None = None) -> None:
    try:
        patch_resharding()
    except MotoInternalsChanged as error:
        raise SystemExit(f"error: {error}") from None
    from moto.server import main as moto_server

    moto_server(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
