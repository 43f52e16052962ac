"""The Avro writer schemas of the Avro tests: v1, and v2 that adds an optional field (``firmware``)
and widens ``battery`` from int to long, as a producer's schema evolves between releases."""

from __future__ import annotations

_IDENTITY = [
    {"name": "device_id", "type": "string"},
    {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
]
V1 = {
    "type": "record",
    "name": "Telemetry",
    "namespace": "tidemark.test",
    "fields": [*_IDENTITY, {"name": "battery", "type": "int"}],
}
V2 = {
    **V1,
    "fields": [
        *_IDENTITY,
        {"name": "battery", "type": "long"},
        {"name": "firmware", "type": ["null", "string"], "default": None},
    ],
}
