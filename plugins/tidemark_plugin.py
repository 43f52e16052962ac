"""tidemark's Airflow plugin: the watermark page, mounted at /tidemark, with an entry in the UI's
navigation ("tidemark watermarks", shown inside the UI). Airflow's api-server loads it from the
plugins folder; restart the api-server after changing it (``airflow plugins`` lists it).

Loading does no work: every Airflow process loads the plugins (the scheduler, the DAG processor,
each task, each ``airflow dags test``), and only the api-server serves the page, so the app (FastAPI
and Airflow's auth, about 2 s of imports on a busy 2-core machine) is built on its first request.
The app reads the configuration and the lake per request.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

URL_PREFIX = "/tidemark"


class _AppOnFirstRequest:
    """An ASGI app that builds tidemark_airflow.watermark_page's app when it is first called."""

    def __init__(self):
        self._app = None

    async def __call__(self, scope, receive, send):
        if self._app is None:
            from tidemark_airflow.watermark_page import create_app

            self._app = create_app()
        await self._app(scope, receive, send)


class TidemarkPlugin(AirflowPlugin):
    name = "tidemark"
    fastapi_apps = [{"app": _AppOnFirstRequest(), "url_prefix": URL_PREFIX, "name": "tidemark watermarks"}]
    external_views = [
        {
            "name": "tidemark watermarks",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "url_route": "tidemark",
            "category": "browse",
        }
    ]
