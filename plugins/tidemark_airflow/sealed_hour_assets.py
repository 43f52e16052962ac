"""Sealed event-time hours as Airflow asset events: one asset per stream, one event per sealed hour.

``sealed_hours_asset(stream)`` is what the quality DAGs schedule on. Each event's extra is
``{"stream": ..., "hour": "2026-11-22T01:00:00Z", "global_watermark": "2026-11-22T03:59:29.999Z"}``:
the hour [hour, hour+1h) (UTC) is sealed, and ``global_watermark`` is G at the end of the run
that sealed it (milliseconds, UTC).

Why an alias: an asset in a task's ``outlets`` gets exactly one event per successful run, also when
nothing was sealed, and one extra per event. Events added through an ``AssetAlias`` outlet are
one per distinct (asset, extra) and none when none are added. So the persist task declares
``outlets=[sealed_hours_alias(stream)]`` and adds one event per sealed hour to the asset through it.

Airflow is imported inside the functions: the unit tests import this module without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tidemark.persist_run_summary import PersistRunSummary
from tidemark_airflow.run_summary import format_hour, format_watermark, summary_times

if TYPE_CHECKING:
    from airflow.sdk import Asset, AssetAlias

# "x-" marks a user-defined URI scheme, which Airflow promises never to give semantics or to validate.
URI_SCHEME = "x-tidemark"


def sealed_hours_asset_name(stream_name: str) -> str:
    return f"tidemark_sealed_hours__{stream_name}"


def sealed_hours_asset(stream_name: str) -> Asset:
    """The asset of ``stream_name``'s sealed hours: ``x-tidemark://<stream>/sealed_hours``."""
    from airflow.sdk import Asset

    return Asset(name=sealed_hours_asset_name(stream_name), uri=f"{URI_SCHEME}://{stream_name}/sealed_hours")


def sealed_hours_alias(stream_name: str) -> AssetAlias:
    """The outlet the persist task declares to emit ``sealed_hours_asset(stream_name)`` events."""
    from airflow.sdk import AssetAlias

    return AssetAlias(name=f"{sealed_hours_asset_name(stream_name)}__emitter")


def sealed_hour_event_extras(summary: PersistRunSummary) -> list[dict[str, str]]:
    """The extra of each asset event of ``summary``'s run (checked by
    tidemark_airflow.run_summary), one per newly sealed hour, ascending, times in one canonical
    UTC form."""
    global_watermark, sealed_hours = summary_times(summary)
    if global_watermark is None:
        return []
    watermark = format_watermark(global_watermark)
    return [
        {"stream": summary.stream, "hour": format_hour(hour), "global_watermark": watermark} for hour in sealed_hours
    ]


def emit_sealed_hour_events(outlet_events: Any, summary: PersistRunSummary) -> list[dict[str, str]]:
    """Add one event of the stream's asset per sealed hour to the task's ``outlet_events``.

    Airflow records them when the task succeeds. Returns the extras added.
    """
    extras = sealed_hour_event_extras(summary)
    asset = sealed_hours_asset(summary.stream)
    emitter = outlet_events[sealed_hours_alias(summary.stream)]
    for extra in extras:
        emitter.add(asset, extra=extra)
    return extras
