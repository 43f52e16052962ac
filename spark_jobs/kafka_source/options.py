"""The Kafka source's options as one typed value (tidemark_kafka's ``spec`` option)."""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.partition_limit import DEFAULT_MAX_PARTITIONS


@dataclass(frozen=True)
class KafkaSourceOptions:
    """The source's options, typed. Spark hands a source strings only: ``to_options`` writes them,
    ``parse`` reads them back once and fails when the query starts, naming the bad option.

    The bounded modes (recovery, backfill) set ``offset_bounds``: only those partitions, only
    offsets [start, end), and the run ends there. ``pinned_global_watermark_ms`` holds G at a
    given value for the whole run (no record read can move it, so no hour is sealed).
    ``resume_from`` is the offset to start from when there is no checkpoint (see
    tidemark.resume_point). ``frozen_partitions`` is the chaos switch: those partitions are
    planned as usual but never read, as a stalled consumer would leave them.

    ``read_tasks`` is the most Spark tasks a batch reads with (tidemark.read_tasks packs the
    partitions' ranges into them); ``max_partitions`` the most partitions the topic may have
    (source.max_partitions): a topic past it fails planning, naming the key.
    """

    bootstrap_servers: str
    topic: str
    starting_offsets: str = "earliest"
    max_records_per_batch: int | None = None
    alignment: bool = True
    max_out_of_orderness_ms: int = 0
    max_drift_ms: int = 900_000
    idle_timeout_ms: int = 300_000
    max_future_skew_ms: int = 300_000
    open_transaction_timeout_ms: int = 900_000
    feedback_dir: str | None = None
    offset_bounds: dict[int, tuple[int, int]] | None = None
    pinned_global_watermark_ms: int | None = None
    resume_from: dict | None = None
    frozen_partitions: tuple[int, ...] = ()
    # spark_jobs.decode_stage.DecodeSpec as JSON: read() decodes what it reads (the persist job);
    # None: read() yields raw rows (RAW_RECORD_SCHEMA).
    decode: str | None = None
    read_tasks: int = 1
    max_partitions: int = DEFAULT_MAX_PARTITIONS

    def to_options(self) -> dict[str, str]:
        import json

        options = {
            "bootstrap_servers": self.bootstrap_servers,
            "topic": self.topic,
            "starting_offsets": self.starting_offsets,
            "alignment": str(self.alignment).lower(),
            "max_out_of_orderness_ms": str(self.max_out_of_orderness_ms),
            "max_drift_ms": str(self.max_drift_ms),
            "idle_timeout_ms": str(self.idle_timeout_ms),
            "max_future_skew_ms": str(self.max_future_skew_ms),
            "open_transaction_timeout_ms": str(self.open_transaction_timeout_ms),
            "read_tasks": str(self.read_tasks),
            "max_partitions": str(self.max_partitions),
        }
        if self.max_records_per_batch is not None:
            options["max_records_per_batch"] = str(self.max_records_per_batch)
        if self.feedback_dir:
            options["feedback_dir"] = self.feedback_dir
        if self.offset_bounds is not None:
            options["offset_bounds"] = json.dumps({str(p): list(b) for p, b in sorted(self.offset_bounds.items())})
        if self.pinned_global_watermark_ms is not None:
            options["pinned_global_watermark_ms"] = str(self.pinned_global_watermark_ms)
        if self.resume_from is not None:
            options["resume_from"] = json.dumps(self.resume_from)
        if self.frozen_partitions:
            options["frozen_partitions"] = ",".join(str(p) for p in self.frozen_partitions)
        if self.decode is not None:
            options["decode"] = self.decode
        return options

    @classmethod
    def parse(cls, options: dict) -> "KafkaSourceOptions":
        for required in ("bootstrap_servers", "topic"):
            if not options.get(required):
                raise ValueError(f"Option '{required}' is required.")
        starting = options.get("starting_offsets", "earliest")
        if starting not in ("earliest", "latest"):
            raise ValueError(f"Option 'starting_offsets' must be earliest or latest, got {starting!r}.")
        alignment = options.get("alignment", "true").lower()
        if alignment not in ("true", "false"):
            raise ValueError(f"Option 'alignment' must be true or false, got {alignment!r}.")
        return cls(
            options["bootstrap_servers"],
            options["topic"],
            starting,
            _whole_number(options, "max_records_per_batch", None, minimum=1),
            alignment == "true",
            _whole_number(options, "max_out_of_orderness_ms", 0),
            _whole_number(options, "max_drift_ms", 900_000, minimum=1),
            _whole_number(options, "idle_timeout_ms", 300_000, minimum=1),
            _whole_number(options, "max_future_skew_ms", 300_000),
            _whole_number(options, "open_transaction_timeout_ms", 900_000, minimum=1),
            options.get("feedback_dir") or None,
            _offset_bounds(options.get("offset_bounds")),
            _whole_number(options, "pinned_global_watermark_ms", None),
            _json_object(options, "resume_from"),
            _partition_list(options.get("frozen_partitions")),
            _decode_spec(options.get("decode")),
            _whole_number(options, "read_tasks", 1, minimum=1),
            _whole_number(options, "max_partitions", DEFAULT_MAX_PARTITIONS, minimum=1),
        )


def _whole_number(options: dict, key: str, default, minimum: int = 0):
    value = options.get(key)
    if value is None:
        return default
    if not str(value).isdigit() or int(value) < minimum:
        raise ValueError(f"Option '{key}' must be a whole number >= {minimum}, got {value!r}.")
    return int(value)


def _offset_bounds(text: str | None) -> dict[int, tuple[int, int]] | None:
    import json

    if text is None:
        return None
    try:
        bounds = {int(p): (int(b[0]), int(b[1])) for p, b in json.loads(text).items()}
    except (ValueError, TypeError, IndexError, AttributeError):
        raise ValueError(f'Option \'offset_bounds\' must be a JSON object {{"partition": [start, end]}}, got {text!r}.') from None
    for partition, (start, end) in bounds.items():
        if partition < 0 or start < 0 or end <= start:
            raise ValueError(f"Option 'offset_bounds': partition {partition} has no offsets in [{start}, {end}).")
    return bounds


def _json_object(options: dict, key: str) -> dict | None:
    import json

    text = options.get(key)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"Option '{key}' must be a JSON object, got {text!r}.")
    return value


def _decode_spec(text: str | None) -> str | None:
    """The decode option, checked once when the query starts (kept as text: it travels to the tasks)."""
    if text is None:
        return None
    from spark_jobs.decode_stage import DecodeSpec

    try:
        DecodeSpec.from_json(text)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"Option 'decode' must be a decode spec (spark_jobs.decode_stage.DecodeSpec): {error}") from None
    return text


def _partition_list(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"Option 'frozen_partitions' must be partition numbers separated by commas, got {text!r}.")
    return tuple(sorted({int(part) for part in parts}))
