"""The embedded stack's alarm inbox as a service: started and stopped like the others, it keeps
every alarm posted with its identity, refuses one without it or that is not a JSON object, lists
them on its page, and keeps them across a restart."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest

from stack.alarm_inbox import AlarmInbox
from stack.environment import LOOPBACK_INBOX_IDENTITY, loopback_inbox_connection
from stack.ports import free_port

pytestmark = pytest.mark.integration

AUTHORIZATION = "Basic " + base64.b64encode(":".join(LOOPBACK_INBOX_IDENTITY).encode()).decode()


def _post(url: str, body: bytes, authorization: str | None = AUTHORIZATION) -> int:
    headers = {"Content-Type": "application/json", **({"Authorization": authorization} if authorization else {})}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_inbox_keeps_what_its_connection_posts_and_shows_it(tmp_path):
    inbox = AlarmInbox(folder=tmp_path / "inbox", port=free_port())
    connection = json.loads(loopback_inbox_connection(inbox.port))
    assert (connection["host"], connection["port"], connection["login"]) == ("127.0.0.1", inbox.port, "tidemark")
    try:
        assert inbox.start().startswith("Alarm inbox started on")
        assert inbox.start().startswith("Alarm inbox is already running")
        alarm = {"stream": "telemetry", "title": "partition 2 STALL <now>", "partitions": [{"partition": 2}]}
        assert _post(inbox.url + "alarms", json.dumps(alarm).encode()) == 200
        assert _post(inbox.url + "alarms", b'{"stream": "x"}', authorization=None) == 401
        assert _post(inbox.url + "alarms", b'{"stream": "x"}', authorization="Basic bm8=") == 401
        assert _post(inbox.url + "alarms", b"[1, 2]") == 400
        assert _post(inbox.url + "alarms", b"not json") == 400
        assert [kept["alarm"] for kept in inbox.alarms()] == [alarm], "only the accepted alarm is kept"
        page = urllib.request.urlopen(inbox.url, timeout=10).read().decode()
        assert "1 alarms received" in page and "partition 2 STALL &lt;now&gt;" in page, "listed, escaped"
        listed = json.loads(urllib.request.urlopen(inbox.url + "alarms.json", timeout=10).read())
        assert [kept["alarm"] for kept in listed] == [alarm]
        assert "running" in inbox.status() and "1 alarms received" in inbox.status()
    finally:
        assert inbox.stop() == "Alarm inbox stopped (what it received stays in its folder)."
    assert inbox.stop() == "Alarm inbox is not running."
    assert [kept["alarm"]["stream"] for kept in inbox.alarms()] == ["telemetry"], "kept across a stop"
    assert LOOPBACK_INBOX_IDENTITY[1] not in (inbox.folder / "inbox.out").read_text(), "its log has no credential"
