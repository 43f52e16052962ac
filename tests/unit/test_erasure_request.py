"""An erasure's predicate and request (tidemark.erasure_predicate, tidemark.erasure_request):
equalities on payload columns only, every mistake refused before any work, naming the param."""

from pathlib import Path

import pytest

from tidemark.erasure_predicate import ErasurePredicateError, parse_predicate
from tidemark.erasure_request import ErasureRequest, ErasureRequestError, parse_erase_form
from tidemark.stream_config import PayloadField, load_streams

REPO = Path(__file__).resolve().parents[2]

COLUMNS = (
    PayloadField(name="device_id", type="string"),
    PayloadField(name="battery", type="double"),
    PayloadField(name="trips", type="long"),
    PayloadField(name="docked", type="boolean"),
)


def test_equalities_and_lists_joined_by_and_become_clauses_of_typed_values():
    predicate = parse_predicate("device_id IN ('a', 'O''Brien', 'a') and trips = 7 AND docked = TRUE", COLUMNS)

    assert [(c.column, c.values) for c in predicate.clauses] == [
        ("device_id", ("a", "O'Brien")),
        ("trips", (7,)),
        ("docked", (True,)),
    ]
    assert predicate.matches({"device_id": "O'Brien", "trips": 7, "docked": True})
    assert not predicate.matches({"device_id": "b", "trips": 7, "docked": True})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("device_id = 'a' OR trips = 1", "joined by AND"),
        ("owner = 'a'", "'owner' is not a payload column"),
        ("trips = 'seven'", "not a long literal for 'trips'"),
        ("trips = 1.5", "not a long literal"),
        ("device_id = reflect('java.lang.System', 'exit', 0)", "not a string literal"),
        ("device_id IN ('a' 'b')", r"expected ',' or '\)'"),
        ("device_id > 'a'", "cannot read from"),
        ("device_id =", "ends too early"),
    ],
)
def test_anything_else_is_refused_saying_what_to_write(text, message):
    with pytest.raises(ErasurePredicateError, match=message):
        parse_predicate(text, COLUMNS)


def test_the_form_names_the_param_that_is_wrong():
    streams = {
        "telemetry": load_streams(
            REPO / "conf" / "streams.yaml", {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
        )["telemetry"]
    }
    good = {"stream": "telemetry", "where": "device_id = 'scooter-7'", "requested_by": " ana ", "reason": "ticket 1"}

    request = parse_erase_form(good, streams)

    assert request == ErasureRequest("telemetry", "device_id = 'scooter-7'", "ana", "ticket 1")
    assert ErasureRequest.decode(request.encode()) == request
    for changed, param in (
        ({"stream": "other"}, "stream"),
        ({"where": "  "}, "where"),
        ({"where": "nope = 1"}, "where"),
        ({"requested_by": ""}, "requested_by"),
    ):
        with pytest.raises(ErasureRequestError, match=f"^param '{param}': "):
            parse_erase_form({**good, **changed}, streams)
