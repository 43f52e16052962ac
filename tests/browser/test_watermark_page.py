"""The watermark page in Airflow: only logged-in users reach it, it shows the recorded stalled
partition for what it is, and headless Chromium renders one chart line per partition plus G.
The recorded topic is on a SCRAM listener: the page asks it with the Airflow connection's
settings and shows none of them; the connection's "Test" button answers from that listener."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from harness.recorded_stream import IDLE, STALLED, STREAM, UNWRITTEN
from harness.secret_search import SecretSearch
from tidemark.event_time_text import format_event_time

pytestmark = pytest.mark.integration

PAGE = f"/tidemark/streams/{STREAM}"


def _get(url: str, token: str | None = None, cookie: str | None = None) -> tuple[int, str]:
    headers = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if cookie:
        headers["Cookie"] = f"_token={cookie}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _shown_time(ms: int) -> str:
    return format_event_time(ms)[:19].replace("T", " ") + "Z"


def test_the_page_is_refused_to_anonymous_users_and_served_to_logged_in_ones(airflow_ui):
    url = airflow_ui.url + PAGE
    assert _get(url)[0] == 401
    assert _get(url, token="not-a-token")[0] == 403
    assert _get(airflow_ui.url + "/tidemark/")[0] == 401
    assert _get(url + "/reports/runs/x/summary.html")[0] == 401, "the reports are behind the login too"

    status, body = _get(url, token=airflow_ui.token)
    assert status == 200
    assert f'data-partition="{STALLED}" data-status="STOP"' in body
    # The UI's iframe sends the login as the _token cookie.
    assert _get(url, cookie=airflow_ui.token)[0] == 200


def test_the_plugin_adds_the_page_to_the_navigation(airflow_ui):
    status, body = _get(airflow_ui.url + "/api/v2/plugins", token=airflow_ui.token)
    assert status == 200
    (plugin,) = [p for p in json.loads(body)["plugins"] if p["name"] == "tidemark"]
    assert [(v["name"], v["href"], v["destination"]) for v in plugin["external_views"]] == [
        ("tidemark watermarks", "/tidemark/", "nav")
    ]
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == ["/tidemark"]


def test_unknown_streams_get_404_naming_the_known_ones_and_an_unwritten_stream_says_it_has_no_ledger(airflow_ui):
    status, body = _get(airflow_ui.url + "/tidemark/streams/nope", token=airflow_ui.token)
    assert status == 404
    assert f"no stream named &#x27;nope&#x27;; known streams: {STREAM}, {UNWRITTEN}" in body
    status, body = _get(airflow_ui.url + "/tidemark/streams/nope/overview.json", token=airflow_ui.token)
    assert (status, json.loads(body)["detail"]) == (
        404,
        f"no stream named 'nope'; known streams: {STREAM}, {UNWRITTEN}",
    )

    status, body = _get(airflow_ui.url + f"/tidemark/streams/{UNWRITTEN}", token=airflow_ui.token)
    assert status == 200
    assert "has no ledger" in body and f"run tidemark_persist__{UNWRITTEN}" in body


def test_the_figures_are_the_recorded_states(airflow_ui):
    recorded = airflow_ui.recorded
    status, body = _get(airflow_ui.url + PAGE + "/overview.json", token=airflow_ui.token)
    assert status == 200
    overview = json.loads(body)
    rows = recorded.history.rows()
    newest = {row[2]: row for row in rows}  # the last batch's row per partition
    partitions = {p["partition"]: p for p in overview["partitions"]}
    assert {p: partitions[p]["status"] for p in partitions} == {0: "ACTIVE", 1: "ACTIVE", STALLED: "STOP", IDLE: "IDLE"}
    for partition, row in newest.items():
        shown = partitions[partition]
        # The topic holds exactly the offsets the ledger saw, so the log's answer is the ledger's.
        assert (shown["position"], shown["log_end"], shown["lag"]) == (row[5], row[6], row[6] - row[5])
    stalled = partitions[STALLED]
    assert (
        stalled["retention_deadline_ms"]
        == recorded.record_time_ms(STALLED, stalled["position"]) + recorded.stream.retention_ms
    )
    assert overview["global_watermark_ms"] == stalled["partition_watermark_ms"]
    assert overview["last_sealed_hour_ms"] == recorded.sealed_hours_ms[-1]
    # The log answered over SASL_SSL, with the settings of the connection in Airflow's database.
    assert overview["log_answered"] is True

    # Neither the page, its figures nor the API server's log shows the password.
    status, html = _get(airflow_ui.url + PAGE, token=airflow_ui.token)
    assert status == 200
    search = SecretSearch(airflow_ui.secured.secrets(), control=f"/tidemark/streams/{STREAM}/reports/")
    search.texts({"page HTML": html, "overview.json": body, "API server log": airflow_ui.log.read_text()})
    assert search.found == [] and "page HTML" in search.controls_found


def _test_connection(airflow_ui, body: dict) -> dict:
    """The connection form's "Test" button: POST /api/v2/connections/test, as the UI sends it."""
    request = urllib.request.Request(
        airflow_ui.url + "/api/v2/connections/test",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {airflow_ui.token}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def test_the_kafka_connections_test_button_answers_from_the_secured_listener(airflow_ui):
    secured = airflow_ui.secured
    assert _test_connection(airflow_ui, secured.rest_connection()) == {
        "status": True,
        "message": "Connection successful.",
    }
    # A refused login is not tried here: the provider's hook waits its 10 s and says only
    # "Broker transport failure" (docs/secured-kafka.md); the jobs' refusals are tested in
    # tests/integration/test_secured_kafka.py.


def test_chromium_renders_the_stalled_partition_and_one_line_per_partition_plus_g(airflow_ui, chromium_path, tmp_path):
    from playwright.sync_api import sync_playwright

    recorded = airflow_ui.recorded
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1400})
            context.add_cookies([{"name": "_token", "value": airflow_ui.token, "url": airflow_ui.url}])
            page = context.new_page()
            started = time.monotonic()
            response = page.goto(airflow_ui.url + PAGE)
            loaded_s = time.monotonic() - started
            assert response.status == 200

            stalled_row = page.locator(f'#partitions tr[data-partition="{STALLED}"]')
            assert stalled_row.get_attribute("class") == "attention"
            assert stalled_row.locator(".status").inner_text() == "STOP"
            assert page.locator("#attention").inner_text() == f"Needs attention: partition {STALLED} (STOP)."
            assert page.locator("#partitions tr.attention").count() == 1, "only the stalled partition stands out"
            # Its red in the table is the status badge's background, not only a word.
            badge = stalled_row.locator(".status").evaluate("e => getComputedStyle(e).backgroundColor")
            assert badge == "rgb(214, 39, 40)"

            watermark_chart, lag_chart = page.locator("figure.chart svg").all()
            assert watermark_chart.locator("polyline").evaluate_all("ls => ls.map(l => l.dataset.line)") == [
                "partition 0",
                "partition 1",
                "partition 2",
                "partition 3",
                "G",
            ]
            assert lag_chart.locator("polyline").count() == 4
            drawn_red = watermark_chart.locator("polyline.attention").evaluate_all(
                "ls => ls.map(l => [l.dataset.line, l.getAttribute('stroke')])"
            )
            assert drawn_red == [[f"partition {STALLED}", "#d62728"]]
            stalled_watermark = [row for row in recorded.history.rows() if row[2] == STALLED][-1][13]
            assert page.locator("#global-watermark").inner_text() == _shown_time(
                int(stalled_watermark.timestamp() * 1000)
            )
            assert page.locator("#last-sealed-hour").inner_text() == _shown_time(recorded.sealed_hours_ms[-1])

            # The report links lead to the reports, behind the same login.
            page.locator("#quality-runs a", has_text="summary").first.click()
            assert page.locator("h1").inner_text() == "recorded quality summary"
            page.go_back()
            run_link = page.locator("#quality-runs a", has_text="DAG run").first.get_attribute("href")
            assert (
                run_link
                == f"/dags/tidemark_quality__{STREAM}/runs/{recorded.quality_run.rsplit('.', 1)[0].replace(':', '%3A').replace('+', '%2B')}"
            )
            page.screenshot(path=str(tmp_path / "watermark_page_stalled.png"), full_page=True)
        finally:
            browser.close()
    assert (tmp_path / "watermark_page_stalled.png").stat().st_size > 10_000
    print(f"page loaded in {loaded_s:.2f}s; screenshot {tmp_path / 'watermark_page_stalled.png'}")
