"""Every log line of the jobs is one JSON object, whatever logged it."""

import json
import logging

from spark_jobs.json_log import JsonLineFormatter


def _line(message, *args) -> dict:
    record = logging.LogRecord("tidemark.persist", logging.INFO, __file__, 1, message, args, None)
    return json.loads(JsonLineFormatter().format(record))


def test_a_dict_message_is_merged_into_the_line():
    assert _line({"event": "batch_persisted", "records": 3}) == {
        "level": "INFO",
        "logger": "tidemark.persist",
        "event": "batch_persisted",
        "records": 3,
    }


def test_a_plain_message_from_a_library_still_parses():
    assert _line('Closing down "%s" connection', "clientserver")["msg"] == 'Closing down "clientserver" connection'


def test_an_exception_carries_its_reason_in_one_line_and_its_traceback():
    try:
        raise ValueError("topic 'fleet.gone' does not exist on 127.0.0.1:9092\nsecond line")
    except ValueError:
        record = logging.LogRecord("tidemark.family", logging.ERROR, __file__, 1, "member %s failed", ("a",), None)
        record.exc_info = __import__("sys").exc_info()
    line = json.loads(JsonLineFormatter().format(record))
    assert line["msg"] == "member a failed"
    assert line["error"] == "ValueError: topic 'fleet.gone' does not exist on 127.0.0.1:9092"
    assert line["traceback"].startswith("Traceback (most recent call last):")
    assert line["traceback"].rstrip().endswith("second line")
