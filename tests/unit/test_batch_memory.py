"""The driver is sized to the row budget, and a budget that cannot fit fails at start-up naming
the key and a value that fits."""

from __future__ import annotations

import pytest
from test_stream_config import _load, _shipped

from tidemark.batch_memory import (
    BASE_HEAP_MIB,
    BatchMemoryError,
    check_batch_fits,
    driver_memory_mib,
    largest_fitting_budget,
    persist_driver_memory_mib,
)
from tidemark.stream_config import StreamConfigError


def _telemetry(tmp_path, **persist):
    document = _shipped()
    document["streams"]["telemetry"]["persist"].update(persist)
    return _load(tmp_path, document)["telemetry"]


def test_the_heap_grows_with_the_row_budget_from_spark_s_own_base(tmp_path):
    payload = _telemetry(tmp_path).payload
    small, default, large = (driver_memory_mib(n, payload) for n in (1_000, 200_000, 5_000_000))
    assert BASE_HEAP_MIB <= small <= default < large
    assert default <= 1_024, "the shipped budget runs in a 1 GiB heap, not a fixed 2 GiB"
    assert all(m % 128 == 0 for m in (small, default, large))


def test_a_budget_that_cannot_fit_names_the_key_and_a_value_that_fits(tmp_path):
    payload = _telemetry(tmp_path).payload
    with pytest.raises(BatchMemoryError) as refused:
        check_batch_fits(50_000_000, payload, 4_096, "half of this machine's 8,192 MiB")
    message = str(refused.value)
    fitting = largest_fitting_budget(4_096, payload)
    assert message.startswith("persist.max_records_per_batch:")
    assert f"at most {fitting:,}" in message
    assert check_batch_fits(fitting, payload, 4_096, "x") <= 4_096, "the suggested value does fit"


def test_sized_to_half_the_machine_unless_the_driver_memory_is_set(tmp_path):
    stream = _telemetry(tmp_path)
    assert persist_driver_memory_mib(stream, 24_576) == driver_memory_mib(200_000, stream.payload)
    with pytest.raises(BatchMemoryError, match="half of this machine's 1,024 MiB"):
        persist_driver_memory_mib(stream, 1_024)
    assert persist_driver_memory_mib(_telemetry(tmp_path, driver_memory="3g"), 1_024) == driver_memory_mib(
        200_000, stream.payload
    )


def test_a_driver_memory_too_small_for_the_budget_fails_when_the_configuration_loads(tmp_path):
    with pytest.raises(StreamConfigError) as refused:
        _telemetry(tmp_path, driver_memory="512m")
    assert "streams.telemetry.persist.max_records_per_batch" in str(refused.value)
    assert "persist.driver_memory" in str(refused.value)
    with pytest.raises(StreamConfigError, match="persist.driver_memory: expected an amount of memory"):
        _telemetry(tmp_path, driver_memory="lots")
