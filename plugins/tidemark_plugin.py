"""tidemark's Airflow plugin: the watermark page, mounted at /tidemark, with an entry in the UI's
navigation ("tidemark watermarks", shown inside the UI). Airflow's api-server loads it from the
plugins folder; restart the api-server after changing it (``airflow plugins`` lists it).

Loading does no work: the app reads the configuration and the lake per request.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from tidemark_airflow.watermark_page import create_app

URL_PREFIX = "/tidemark"


class TidemarkPlugin(AirflowPlugin):
    name = "tidemark"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "tidemark watermarks"}]
    external_views = [
        {
            "name": "tidemark watermarks",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "url_route": "tidemark",
            "category": "browse",
        }
    ]
