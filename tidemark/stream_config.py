"""Stream configuration: conf/streams.yaml parsed once into typed, validated, frozen dataclasses.

Every consumer of configuration (the Spark jobs, the DAG files, the generator) goes through
``load_streams``; a bad value fails here, at start-up, with the full key path and the reason,
never later as a confusing runtime error. All durations are held in milliseconds.

String values may refer to the environment as ``${VAR}`` (required) or ``${VAR:-default}``: that
is how the embedded default and the full stack share one file with other values.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from tidemark.alert_settings import AlertSettings, parse_alerts
from tidemark.duration import format_duration_ms, parse_duration_ms
from tidemark.partition_limit import DEFAULT_MAX_PARTITIONS, suggested_partition_limit
from tidemark.stall_rules import StallRules

FIELD_TYPES = ("string", "double", "long", "int", "boolean")
EVENT_TIME_FORMATS = ("iso8601", "epoch_millis")
STARTING_OFFSETS = ("earliest", "latest")
PERSIST_MODES = ("available_now", "continuous")

# Columns tidemark adds to every events row; a payload field may not reuse these names.
RESERVED_COLUMNS = frozenset(
    {
        "source_partition",
        "source_offset",
        "log_timestamp",
        "event_time",
        "event_date",
        "event_hour",
        "record_key",
        "batch_id",
    }
)

_STREAM_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class StreamConfigError(ValueError):
    """A configuration value is missing, malformed or inconsistent; the message names the key."""


@dataclass(frozen=True)
class PayloadField:
    name: str
    type: str
    required: bool


@dataclass(frozen=True)
class PayloadSchema:
    """How a record's value is decoded: a JSON object with an event-time field and typed fields."""

    event_time_field: str
    event_time_format: str
    fields: tuple[PayloadField, ...]
    max_record_bytes: int


@dataclass(frozen=True)
class EventTimeTolerances:
    """The stream's event-time tolerances, all in milliseconds (see DESIGN.md, event-time rules)."""

    max_out_of_orderness_ms: int
    allowed_lateness_ms: int
    idle_timeout_ms: int
    max_drift_ms: int
    max_future_skew_ms: int


@dataclass(frozen=True)
class KafkaSource:
    bootstrap_servers: str
    topic: str
    partitions: int
    starting_offsets: str
    # True when the producer sets the record timestamp to the event time (CreateTime = event
    # time); only then can the log's time index plan event-time slices.
    log_timestamp_is_event_time: bool
    # How long a partition's last stable offset may stand still below its written end (an open
    # transaction) before the job reports the partition as held by it (ms). Kafka aborts a
    # transaction after the producer's transaction.timeout.ms, at most 15 minutes by default.
    open_transaction_timeout_ms: int = 15 * 60_000
    # The most partitions the topic may have (tidemark.partition_limit): past it a job fails
    # at start-up instead of planning and ledgering every partition of a topic grown by mistake.
    max_partitions: int = DEFAULT_MAX_PARTITIONS
    # The most Spark tasks a batch reads the log with (tidemark.read_tasks); None: the cluster's
    # parallelism (Spark's defaultParallelism), like the input splits of Spark's own sources.
    read_tasks: int | None = None


@dataclass(frozen=True)
class LakeLocation:
    """Where a stream's tables and checkpoints live: <root>/<stream>/<table>."""

    root: str
    checkpoint_root: str


@dataclass(frozen=True)
class PersistSettings:
    mode: str
    schedule: str
    trigger_interval_ms: int
    max_records_per_batch: int
    spark_conn_id: str
    # The driver heap of the jobs that read the stream in batches (MiB); None: sized to the row
    # budget (tidemark.batch_memory).
    driver_memory_mib: int | None = None


@dataclass(frozen=True)
class QualitySettings:
    """The stream's scheduled quality checks (see DESIGN.md, Checks); durations in ms.

    The defaults here are also the defaults of the optional ``quality:`` section.
    """

    schedule: str = "*/10 * * * *"  # cron of the scheduled quality run
    # Cron of the sweep (dags/tidemark_sweep.py): completeness of every sealed hour the source log
    # still retains, the net under the Delta-log reading of each scheduled run.
    sweep_schedule: str = "40 */6 * * *"
    stall_window: int = 6  # K: ledger rows per partition the stall rules look at (>= 2)
    stall_timeout_ms: int = 30 * 60_000
    max_partition_lag_ms: int = 60 * 60_000
    # Longest allowed gap between consecutive event times of one partition within an hour.
    event_time_gap_ms: int = 30 * 60_000
    max_late_per_hour: int = 1000
    max_quarantined_per_hour: int = 100
    # How many earlier hours define "a partition normally produces in this hour".
    history_hours: int = 24

    def stall_rules(self) -> StallRules:
        return StallRules(self.stall_window, self.stall_timeout_ms, self.max_partition_lag_ms)


@dataclass(frozen=True)
class BackfillSettings:
    """The stream's daily reconciliation (dags/tidemark_backfill.py): at ``reconcile_schedule``
    (cron, UTC) the previous day is backfilled into a shadow set and compared with live. The
    default is also that of the optional ``backfill:`` section."""

    reconcile_schedule: str = "30 2 * * *"


@dataclass(frozen=True)
class OfflineDevicesSettings:
    """The stream's offline-device detector (spark_jobs/offline_devices.py); durations in ms.

    A device (``device_field``, a payload field) is offline once ``offline_after`` has passed
    since its last record. The detector reads sealed event time in slices: ``live_slice`` long in
    live runs, ``backfill_slice`` long in backfills. Slice length changes how much one micro-batch
    holds, never the result. The defaults here are also those of the ``offline_devices:`` section.
    """

    device_field: str = "device_id"
    offline_after_ms: int = 30 * 60_000
    live_slice_ms: int = 15 * 60_000
    backfill_slice_ms: int = 6 * 3_600_000


@dataclass(frozen=True)
class StreamConfig:
    name: str
    source: KafkaSource
    payload: PayloadSchema
    event_time: EventTimeTolerances
    lake: LakeLocation
    retention_ms: int
    persist: PersistSettings
    quality: QualitySettings = field(default_factory=QualitySettings)
    backfill: BackfillSettings = field(default_factory=BackfillSettings)
    # None: the stream has no offline-device detector (no ``offline_devices:`` section).
    offline_devices: OfflineDevicesSettings | None = None
    # None: nobody is told (no ``alerts:`` section); see tidemark.alert_settings.
    alerts: AlertSettings | None = None

    def table_path(self, table: str) -> str:
        """Location of one of the stream's Delta tables (events, ledger, quarantine, late, seals)."""
        return f"{self.lake.root.rstrip('/')}/{self.name}/{table}"

    def checkpoint_path(self, job: str) -> str:
        """Location of one job's Spark checkpoint for this stream."""
        return f"{self.lake.checkpoint_root.rstrip('/')}/{self.name}/{job}"


def load_streams(path: str | Path, environ: Mapping[str, str] | None = None) -> dict[str, StreamConfig]:
    """Read and validate every stream of a streams.yaml file.

    Raises StreamConfigError naming the file, the key path and what is wrong.
    """
    path = Path(path)
    environ = os.environ if environ is None else environ
    try:
        document = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise StreamConfigError(f"{path}: stream configuration file not found (set TIDEMARK_CONF)") from None
    except yaml.YAMLError as error:
        raise StreamConfigError(f"{path}: not valid YAML: {error}") from None
    root = _Section(document, "", str(path), environ)
    streams_section = root.section("streams")
    root.reject_unknown()
    names = streams_section.keys()
    if not names:
        raise StreamConfigError(f"{path}: streams: at least one stream is required")
    return {name: _parse_stream(name, streams_section.section(name)) for name in names}


def load_stream(path: str | Path, name: str, environ: Mapping[str, str] | None = None) -> StreamConfig:
    """Read one stream by name; an unknown name fails with the names that exist."""
    streams = load_streams(path, environ)
    if name not in streams:
        raise StreamConfigError(f"{path}: no stream named {name!r}; configured streams: {', '.join(sorted(streams))}")
    return streams[name]


def _parse_stream(name: str, section: "_Section") -> StreamConfig:
    if not _STREAM_NAME.match(name):
        section.fail("", "a stream name must be lower-case letters, digits and '_', starting with a letter")

    source_section = section.section("source")
    kind = source_section.choice("kind", ("kafka",))
    source = KafkaSource(
        bootstrap_servers=source_section.text("bootstrap_servers"),
        topic=source_section.text("topic"),
        partitions=source_section.positive_int("partitions"),
        starting_offsets=source_section.choice("starting_offsets", STARTING_OFFSETS, default="earliest"),
        log_timestamp_is_event_time=source_section.boolean("log_timestamp_is_event_time", default=True),
        open_transaction_timeout_ms=source_section.duration("open_transaction_timeout", default="15m", minimum_ms=1),
        max_partitions=source_section.positive_int("max_partitions", default=DEFAULT_MAX_PARTITIONS),
        read_tasks=source_section.whole_number("read_tasks") if source_section.has("read_tasks") else None,
    )
    if source.partitions > source.max_partitions:
        source_section.fail(
            "max_partitions",
            f"{source.max_partitions} is below the topic's {source.partitions} partitions (source.partitions); "
            f"suggested: {suggested_partition_limit(source.partitions)}",
        )
    if source.read_tasks == 0:
        source_section.fail(
            "read_tasks", "0 read tasks cannot read anything; suggested: leave it unset (the cluster's parallelism) or 1 and up"
        )
    if source.read_tasks is not None and source.read_tasks > source.max_partitions:
        source_section.fail(
            "read_tasks",
            f"{source.read_tasks} read tasks cannot all be used with at most {source.max_partitions} partitions "
            f"(a task reads one partition at least); suggested: leave it unset (the cluster's parallelism) "
            f"or at most {source.max_partitions}",
        )
    del kind  # only Kafka today; Kinesis will be a second choice here
    source_section.reject_unknown()

    payload = _parse_payload(section.section("payload"))

    tolerance_section = section.section("event_time")
    event_time = EventTimeTolerances(
        max_out_of_orderness_ms=tolerance_section.duration("max_out_of_orderness"),
        allowed_lateness_ms=tolerance_section.duration("allowed_lateness"),
        idle_timeout_ms=tolerance_section.duration("idle_timeout", minimum_ms=1),
        max_drift_ms=tolerance_section.duration("max_drift", minimum_ms=1),
        max_future_skew_ms=tolerance_section.duration("max_future_skew"),
    )
    tolerance_section.reject_unknown()
    if event_time.max_drift_ms <= event_time.max_out_of_orderness_ms:
        tolerance_section.fail(
            "max_drift",
            f"{format_duration_ms(event_time.max_drift_ms)} must be larger than max_out_of_orderness "
            f"{format_duration_ms(event_time.max_out_of_orderness_ms)}: aligned reading advances by the difference",
        )

    lake_section = section.section("lake")
    lake = LakeLocation(root=lake_section.text("root"), checkpoint_root=lake_section.text("checkpoint_root"))
    lake_section.reject_unknown()

    retention_ms = section.duration("retention", minimum_ms=1)
    if event_time.allowed_lateness_ms >= retention_ms:
        section.fail(
            "event_time.allowed_lateness",
            f"{format_duration_ms(event_time.allowed_lateness_ms)} is not shorter than the log retention "
            f"{format_duration_ms(retention_ms)}: records could leave the log before their hour is sealed",
        )

    persist_section = section.section("persist")
    persist = PersistSettings(
        mode=persist_section.choice("mode", PERSIST_MODES, default="available_now"),
        schedule=persist_section.text("schedule", default="*/5 * * * *"),
        trigger_interval_ms=persist_section.duration("trigger_interval", default="30s", minimum_ms=1),
        max_records_per_batch=persist_section.positive_int("max_records_per_batch", default=200_000),
        spark_conn_id=persist_section.text("spark_conn_id", default="spark_default"),
        driver_memory_mib=persist_section.memory_mib("driver_memory"),
    )
    if persist.driver_memory_mib is not None:
        from tidemark.batch_memory import BatchMemoryError, check_batch_fits

        try:
            check_batch_fits(persist.max_records_per_batch, payload, persist.driver_memory_mib, "persist.driver_memory")
        except BatchMemoryError as error:
            persist_section.fail("max_records_per_batch", str(error).removeprefix("persist.max_records_per_batch: "))
    persist_section.reject_unknown()
    quality = _parse_quality(section.optional_section("quality"))
    backfill = _parse_backfill(section.optional_section("backfill"))
    offline_devices = _parse_offline_devices(section, payload)
    alerts = parse_alerts(section.optional_section("alerts")) if section.has("alerts") else None
    section.reject_unknown()
    return StreamConfig(name, source, payload, event_time, lake, retention_ms, persist, quality, backfill, offline_devices, alerts)


def _parse_quality(section: "_Section") -> QualitySettings:
    defaults = QualitySettings()
    quality = QualitySettings(
        schedule=section.text("schedule", default=defaults.schedule),
        stall_window=section.whole_number("stall_window", default=defaults.stall_window, minimum=2),
        stall_timeout_ms=section.duration(
            "stall_timeout", default=format_duration_ms(defaults.stall_timeout_ms), minimum_ms=1
        ),
        max_partition_lag_ms=section.duration(
            "max_partition_lag", default=format_duration_ms(defaults.max_partition_lag_ms), minimum_ms=1
        ),
        event_time_gap_ms=section.duration(
            "event_time_gap", default=format_duration_ms(defaults.event_time_gap_ms), minimum_ms=1
        ),
        max_late_per_hour=section.whole_number("max_late_per_hour", default=defaults.max_late_per_hour, minimum=0),
        max_quarantined_per_hour=section.whole_number(
            "max_quarantined_per_hour", default=defaults.max_quarantined_per_hour, minimum=0
        ),
        history_hours=section.whole_number("history_hours", default=defaults.history_hours, minimum=1),
        sweep_schedule=section.text("sweep_schedule", default=defaults.sweep_schedule),
    )
    if len(quality.sweep_schedule.split()) != 5:
        section.fail("sweep_schedule", f"{quality.sweep_schedule!r} is not a cron expression of five fields, e.g. \"40 */6 * * *\"")
    section.reject_unknown()
    return quality


def _parse_backfill(section: "_Section") -> BackfillSettings:
    schedule = section.text("reconcile_schedule", default=BackfillSettings().reconcile_schedule)
    if len(schedule.split()) != 5:
        section.fail("reconcile_schedule", f"{schedule!r} is not a cron expression of five fields, e.g. \"30 2 * * *\"")
    section.reject_unknown()
    return BackfillSettings(schedule)


# A slice shorter than this makes a micro-batch per few records: a typo, not a choice.
_MIN_SLICE_MS = 60_000


def _parse_offline_devices(stream_section: "_Section", payload: PayloadSchema) -> OfflineDevicesSettings | None:
    if not stream_section.has("offline_devices"):
        return None
    section = stream_section.optional_section("offline_devices")
    defaults = OfflineDevicesSettings()
    device_field = section.text("device_field", default=defaults.device_field)
    declared = {f.name: f for f in payload.fields}
    if device_field not in declared:
        section.fail("device_field", f"{device_field!r} is not a payload field; declared: {', '.join(declared)}")
    if declared[device_field].type not in ("string", "long", "int"):
        section.fail("device_field", f"{device_field!r} is a {declared[device_field].type}; a device id is a string, long or int")
    settings = OfflineDevicesSettings(
        device_field=device_field,
        offline_after_ms=section.duration(
            "offline_after", default=format_duration_ms(defaults.offline_after_ms), minimum_ms=1
        ),
        live_slice_ms=section.duration("live_slice", default=format_duration_ms(defaults.live_slice_ms)),
        backfill_slice_ms=section.duration("backfill_slice", default=format_duration_ms(defaults.backfill_slice_ms)),
    )
    for key, ms in (("live_slice", settings.live_slice_ms), ("backfill_slice", settings.backfill_slice_ms)):
        if ms < _MIN_SLICE_MS:
            section.fail(key, f"{format_duration_ms(ms)} is shorter than {format_duration_ms(_MIN_SLICE_MS)}")
    section.reject_unknown()
    return settings


def _parse_payload(section: "_Section") -> PayloadSchema:
    event_time_field = section.text("event_time_field")
    event_time_format = section.choice("event_time_format", EVENT_TIME_FORMATS, default="iso8601")
    fields_section = section.section("fields")
    fields = []
    for field_name in fields_section.keys():
        field_section = fields_section.section(field_name)
        if not _IDENTIFIER.match(field_name):
            field_section.fail("", "a field name must be a letter or '_' followed by letters, digits or '_'")
        if field_name in RESERVED_COLUMNS:
            field_section.fail("", f"{field_name!r} is a column tidemark adds itself; rename the field")
        if field_name == event_time_field:
            field_section.fail("", "the event-time field is declared by event_time_field, not as a payload field")
        fields.append(
            PayloadField(
                name=field_name,
                type=field_section.choice("type", FIELD_TYPES),
                required=field_section.boolean("required", default=True),
            )
        )
        field_section.reject_unknown()
    if not fields:
        fields_section.fail("", "declare at least one payload field")
    max_record_bytes = section.positive_int("max_record_bytes", default=1_048_576)
    section.reject_unknown()
    return PayloadSchema(event_time_field, event_time_format, tuple(fields), max_record_bytes)


class _Section:
    """A mapping in the YAML document that knows its key path, for error messages."""

    def __init__(self, value: Any, path: str, file: str, environ: Mapping[str, str]):
        self._file = file
        self._path = path
        self._environ = environ
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.fail("", f"expected a mapping of keys, got {type(value).__name__}")
        self._values: dict = value
        self._read: set[str] = set()

    def fail(self, key: str, reason: str):
        where = ".".join(part for part in (self._path, key) if part) or "(top level)"
        raise StreamConfigError(f"{self._file}: {where}: {reason}")

    def keys(self) -> list[str]:
        self._read.update(str(k) for k in self._values)
        return [str(k) for k in self._values]

    def section(self, key: str) -> "_Section":
        if key not in self._values:
            self.fail(key, "missing required section")
        self._read.add(key)
        return _Section(self._values[key], ".".join(p for p in (self._path, key) if p), self._file, self._environ)

    def has(self, key: str) -> bool:
        return key in self._values

    def optional_section(self, key: str) -> "_Section":
        """Like ``section``, but a missing section reads as an empty one (all defaults)."""
        self._read.add(key)
        return _Section(self._values.get(key), ".".join(p for p in (self._path, key) if p), self._file, self._environ)

    def _raw(self, key: str, default: Any) -> Any:
        self._read.add(key)
        if key not in self._values or self._values[key] is None:
            if default is _REQUIRED:
                self.fail(key, "missing required key")
            return default
        value = self._values[key]
        return self._interpolate(key, value) if isinstance(value, str) else value

    def _interpolate(self, key: str, text: str) -> str:
        def substitute(match: re.Match) -> str:
            variable, default = match.group(1), match.group(2)
            if variable in self._environ and self._environ[variable] != "":
                return self._environ[variable]
            if default is not None:
                return default
            self.fail(key, f"environment variable {variable} is not set (see `python -m stack env`)")

        return _ENV_REF.sub(substitute, text)

    def text(self, key: str, default: Any = None) -> str:
        value = self._raw(key, _REQUIRED if default is None else default)
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"expected a non-empty string, got {value!r}")
        return value.strip()

    def text_list(self, key: str) -> tuple[str, ...]:
        """One non-empty string or a list of them (required)."""
        value = self._raw(key, _REQUIRED)
        values = [self._interpolate(key, v) if isinstance(v, str) else v for v in value] if isinstance(value, list) else [value]
        items = tuple(v.strip() if isinstance(v, str) else v for v in values)
        if not items or not all(isinstance(v, str) and v for v in items):
            self.fail(key, f"expected a non-empty string or a list of them, got {value!r}")
        return items

    def choice(self, key: str, options: tuple[str, ...], default: Any = None) -> str:
        value = self._raw(key, _REQUIRED if default is None else default)
        if value not in options:
            self.fail(key, f"expected one of {', '.join(options)}; got {value!r}")
        return value

    def boolean(self, key: str, default: Any = None) -> bool:
        value = self._raw(key, _REQUIRED if default is None else default)
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {value!r}")
        return value

    def positive_int(self, key: str, default: Any = None) -> int:
        return self.whole_number(key, default, minimum=1)

    def whole_number(self, key: str, default: Any = None, minimum: int = 0) -> int:
        value = self._raw(key, _REQUIRED if default is None else default)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(key, f"expected a whole number >= {minimum}, got {value!r}")
        return value

    def memory_mib(self, key: str) -> int | None:
        """An optional amount of memory like ``768m`` or ``2g`` (JVM style), in MiB; None if unset."""
        value = self._raw(key, None)
        if value is None:
            return None
        match = re.fullmatch(r"\s*(\d+)\s*([mMgG])\s*", str(value))
        if not match or int(match.group(1)) == 0:
            self.fail(key, f"expected an amount of memory like 768m or 2g, got {value!r}")
        return int(match.group(1)) * (1024 if match.group(2).lower() == "g" else 1)

    def duration(self, key: str, default: Any = None, minimum_ms: int = 0) -> int:
        value = self._raw(key, _REQUIRED if default is None else default)
        try:
            ms = parse_duration_ms(value)
        except ValueError as error:
            self.fail(key, str(error))
        if ms < minimum_ms:
            self.fail(key, f"must be greater than zero, got {value!r}")
        return ms

    def reject_unknown(self) -> None:
        unknown = sorted(str(k) for k in self._values if str(k) not in self._read)
        if unknown:
            self.fail(unknown[0], f"unknown key; expected one of {', '.join(sorted(self._read)) or '(none)'}")


_REQUIRED = object()
