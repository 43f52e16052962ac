"""The watermark page: a FastAPI app the Airflow plugin mounts at /tidemark (see
plugins/tidemark_plugin.py), one page per stream of the configuration.

Routes, relative to the mount point:
- ``/``: the configured streams;
- ``/streams/{stream}``: per partition read position, log end, lag, W_p, status, retention
  deadline, late and quarantined counts; W_p and G over time; lag over time; report links;
- ``/streams/{stream}/overview.json``: the same figures for machines;
- ``/streams/{stream}/reports/{path}``: the stream's quality reports and Data Docs.

Airflow mounts plugin apps without its auth, so every route requires a logged-in Airflow user
(the UI's ``_token`` cookie, which the iframe sends, or a Bearer token): anonymous requests get
401. The tables are read without Spark (connectors.lake_reader).
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from tidemark.dag_ids import persist_dag_id
from tidemark.stream_config import StreamConfig, StreamConfigError, load_streams

DEFAULT_CONF = Path(__file__).resolve().parents[2] / "conf" / "streams.yaml"


def _auth_dependencies() -> list:
    from airflow.api_fastapi.core_api.security import requires_authenticated

    return [Depends(requires_authenticated())]


def create_app(conf_path: str | None = None, reports_root: Path | None = None, require_login: bool = True) -> FastAPI:
    """The page app. ``conf_path``: streams.yaml (default: $TIDEMARK_CONF, else the checkout's);
    ``reports_root``: the quality reports (default: $TIDEMARK_HOME/reports). ``require_login``
    False only for rendering tests that run the app outside Airflow."""
    app = FastAPI(title="tidemark watermarks", dependencies=_auth_dependencies() if require_login else [])

    def streams() -> dict[str, StreamConfig]:
        # Read per request: a changed streams.yaml shows without restarting the api-server.
        try:
            return load_streams(conf_path or os.environ.get("TIDEMARK_CONF", str(DEFAULT_CONF)))
        except StreamConfigError as error:
            raise HTTPException(status_code=500, detail=str(error)) from None

    def stream_named(name: str) -> StreamConfig:
        known = streams()
        if name not in known:
            raise HTTPException(
                status_code=404, detail=f"no stream named {name!r}; known streams: {', '.join(sorted(known))}"
            )
        return known[name]

    def reports() -> Path:
        if reports_root is not None:
            return reports_root
        from tidemark_airflow.spark_job_operator import reports_root as default_root

        return default_root()

    @app.exception_handler(HTTPException)
    async def _problem(request: Request, error: HTTPException):
        from tidemark_airflow.watermark_page_html import problem_page

        if request.url.path.endswith(".json"):
            return JSONResponse({"detail": error.detail}, status_code=error.status_code)
        return HTMLResponse(problem_page(f"{error.status_code}", str(error.detail)), status_code=error.status_code)

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request, q: str = "") -> str:
        """Every stream in one line, worst first, from each one's last quality check (no lake or
        log read per stream: 200 streams load as fast as one)."""
        from tidemark.stream_glance import stream_glances
        from tidemark_airflow.watermark_page_html import index_page

        known = streams()
        glances = stream_glances({name: s.family for name, s in known.items()}, reports(), q)
        return index_page(glances, request.scope.get("root_path", ""), q, len(known))

    @app.get("/streams/{name}", response_class=HTMLResponse)
    def stream_page(name: str, request: Request) -> HTMLResponse:
        from tidemark_airflow.quality_reports import stream_reports
        from tidemark_airflow.watermark_page_html import problem_page
        from tidemark_airflow.watermark_page_html import stream_page as render

        stream = stream_named(name)
        overview = _overview(stream)
        if overview is None:
            message = f"stream {name!r} has no ledger at {stream.table_path('ledger')} yet: the persist job has not written to this lake (run {persist_dag_id(stream)})."
            return HTMLResponse(problem_page(f"{name}: no ledger", message))
        return HTMLResponse(render(overview, stream_reports(reports(), name), request.scope.get("root_path", "")))

    @app.get("/streams/{name}/overview.json")
    def stream_json(name: str) -> JSONResponse:
        overview = _overview(stream_named(name))
        if overview is None:
            raise HTTPException(status_code=404, detail=f"stream {name!r} has no ledger yet")
        return JSONResponse(asdict(overview))

    @app.get("/streams/{name}/reports/{path:path}")
    def report_file(name: str, path: str) -> FileResponse:
        stream_named(name)
        folder = (reports() / name).resolve()
        target = (folder / path).resolve()
        if not target.is_relative_to(folder) or not target.is_file():
            raise HTTPException(status_code=404, detail=f"no report {path!r} for stream {name!r}")
        return FileResponse(target)

    return app


def _overview(stream: StreamConfig):
    """The stream's overview, or None when it has no ledger table. A Kafka stream's log is asked
    with the settings of the Airflow connection it names (``source.kafka_conn_id``), read from
    Airflow on every request, as a task reads them; when they cannot be had, the page shows the
    lake and says why the log was not asked."""
    from dataclasses import replace

    from connectors.lake_reader import LedgerMissingError, read_stream_overview

    unusable = _apply_kafka_connection(stream)
    try:
        overview = read_stream_overview(stream, ask_log=unusable is None)
    except LedgerMissingError:
        return None
    return overview if unusable is None else replace(overview, notes=(*overview.notes, unusable))


def _apply_kafka_connection(stream: StreamConfig) -> str | None:
    """Put the settings of the stream's Kafka connection into this process's environment, where
    the log's clients read them (tidemark_airflow.kafka_connection); None when done or when the
    stream names none, else why not (no such connection, settings tidemark cannot use), for the
    page. The API server finds connections in its metadata database and secrets backends."""
    conn_id = stream.source.kafka_conn_id
    if conn_id is None:
        return None
    from airflow.sdk.exceptions import AirflowNotFoundException, AirflowRuntimeError

    from tidemark.kafka_access import KafkaAccessError
    from tidemark_airflow.kafka_connection import apply_kafka_connection

    try:
        apply_kafka_connection(conn_id, stream.source.bootstrap_servers)
    except (AirflowNotFoundException, AirflowRuntimeError):
        return f"the log was not asked: Airflow has no connection {conn_id!r} (source.kafka_conn_id)"
    except KafkaAccessError as error:
        return f"the log was not asked: {error}"
    return None
