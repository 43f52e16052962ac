"""Which members a family's quality tick or sweep looks at
(tidemark_airflow.family_quality_operator._split_by_events_table): a member with no events table
is not persisted yet, and is neither checked nor failed there."""

from __future__ import annotations

import copy
from pathlib import Path

import pyarrow as pa
import yaml
from deltalake import write_deltalake

from tidemark.stream_config import read_streams_file
from tidemark.stream_families import stream_name_for
from tidemark.topic_listing import refreshed, write_listing
from tidemark_airflow.family_quality_operator import _split_by_events_table

REPO = Path(__file__).resolve().parents[2]


def test_only_members_with_an_events_table_are_looked_at_the_others_are_named_not_persisted(tmp_path):
    shape = copy.deepcopy(yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"])
    del shape["source"]["topic"], shape["source"]["partitions"], shape["offline_devices"]
    shape["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
    conf = tmp_path / "streams.yaml"
    conf.write_text(yaml.safe_dump({"families": {"vans": {"match": "vans.*", **shape}}}))
    topics = {"vans.eu": 1, "vans.us": 2, "vans.new": 1}
    write_listing(tmp_path / "listings" / "vans.json", refreshed(None, "vans", "b:1", topics, 0, stream_name_for))
    streams = list(read_streams_file(conf).streams.values())
    assert sorted(stream.name for stream in streams) == ["vans_eu", "vans_new", "vans_us"]
    # vans_eu has an events table; vans_us only a quarantine table (not what makes a member persisted).
    members = {stream.name: stream for stream in streams}
    write_deltalake(members["vans_eu"].table_path("events"), pa.table({"x": [1]}))
    write_deltalake(members["vans_us"].table_path("quarantine"), pa.table({"x": [1]}))

    persisted, not_persisted = _split_by_events_table(streams)

    assert [stream.name for stream in persisted] == ["vans_eu"]
    assert sorted(not_persisted) == ["vans_new", "vans_us"]
