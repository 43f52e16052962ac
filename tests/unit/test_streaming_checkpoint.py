"""The source's offset in a streaming checkpoint's offset log file (spark_jobs.streaming_checkpoint)."""

import json

from spark_jobs.streaming_checkpoint import source_offset

METADATA = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1795410129011, "conf": {}})
OFFSET = {
    "topic": "telemetry",
    "plan_seq": 106,
    "read_time_ms": 1795410129010,
    "partitions": {"0": {"position": 24565}},
}


def test_the_one_source_line_of_an_offset_log_file_is_its_offset():
    assert source_offset("\n".join(["v1", METADATA, json.dumps(OFFSET)])) == OFFSET


def test_a_file_the_batch_function_cannot_read_for_sure_says_nothing():
    other_version = "\n".join(["v2", METADATA, json.dumps(OFFSET)])
    two_sources = "\n".join(["v1", METADATA, json.dumps(OFFSET), json.dumps(OFFSET)])
    not_ours = "\n".join(["v1", METADATA, json.dumps({"logOffset": 3})])
    torn = "\n".join(["v1", METADATA, json.dumps(OFFSET)[:40]])
    for text in (other_version, two_sources, not_ours, torn, "", "v1"):
        assert source_offset(text) is None, text
