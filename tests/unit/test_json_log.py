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
