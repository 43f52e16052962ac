"""The configuration reference (docs/reference/configuration.md) is what the contract says today:
regenerated from tidemark/stream_config.py's Structs, it equals the committed page, and every key
in it says what it means."""

from __future__ import annotations

from pathlib import Path

import msgspec.inspect as mi

from tidemark.stream_config import KafkaSource, KinesisSource, StreamsFile
from tidemark_cli.config_reference import COMMAND, PAGE, render, sections

REPO = Path(__file__).resolve().parents[2]


def test_the_committed_page_is_the_one_the_contract_generates():
    committed = (REPO / PAGE).read_text() if (REPO / PAGE).exists() else ""

    assert committed == render(), f"{PAGE} differs from the configuration contract; regenerate it with `{COMMAND}`"


def test_every_key_of_the_file_has_a_type_a_default_and_a_description():
    rows = [row for section in sections() for row in section.rows]

    undescribed = [row.key for row in rows if not row.description]
    assert not undescribed, f"add a comment above these fields in their Struct, then run `{COMMAND}`: {undescribed}"
    assert all(row.type and row.default for row in rows)


def test_the_page_lists_each_kind_of_source_with_the_keys_its_struct_declares():
    by_title = {section.title: section for section in sections()}

    for kind, struct in (("kafka", KafkaSource), ("kinesis", KinesisSource)):
        section = by_title[f"streams.<name>.source (kind: {kind})"]
        declared = [f"streams.<name>.source.{field.encode_name}" for field in mi.type_info(struct).fields]
        assert [row.key for row in section.rows] == declared


def test_durations_and_defaults_read_as_the_file_writes_them():
    rows = {row.key: row for section in sections() for row in section.rows}

    assert rows["streams.<name>.persist.trigger_interval"].default == "`30s`"
    assert rows["streams.<name>.source.open_transaction_timeout"].default == "`15m`"
    assert rows["streams.<name>.source.max_shards"].default == "`2048`"
    assert rows["streams.<name>.retention"].default == "required"
    assert rows["streams.<name>.payload.fields"].default == "required"
    assert rows["streams.<name>.alerts.email.from"].default == "unset"
    assert rows["streams.<name>.quality"].default == "the section's defaults"
    assert (
        rows["streams.<name>.payload.fields.<name>.type"].type == "one of `boolean`, `double`, `int`, `long`, `string`"
    )
    # A named entry's key is its name: no `name:` key inside it.
    assert "streams.<name>.name" not in rows
    assert mi.type_info(StreamsFile).fields[0].encode_name == "streams"
