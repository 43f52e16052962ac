"""How a family's tick is dealt into drivers (tidemark_airflow.family_look_operator.dealt) and what
one driver's result says (tidemark.family_driver_result)."""

from __future__ import annotations

from tidemark.family_driver_result import FamilyDriverResult, MemberOutcome
from tidemark_airflow.family_look_operator import dealt


def test_members_with_work_are_dealt_round_robin_into_at_most_max_drivers_groups():
    members = [f"m{i}" for i in range(7)]
    assert dealt(members, 3) == [["m0", "m3", "m6"], ["m1", "m4"], ["m2", "m5"]]
    assert dealt(members[:2], 4) == [["m0"], ["m1"]], "never an empty group: no driver without work"
    assert dealt([], 4) == []
    groups = dealt([f"s{i}" for i in range(200)], 4)
    assert len(groups) == 4 and sorted(len(g) for g in groups) == [50, 50, 50, 50]
    assert sorted(name for group in groups for name in group) == sorted(f"s{i}" for i in range(200))


def test_a_drivers_result_names_the_members_that_failed_and_crosses_processes_as_one_value():
    result = FamilyDriverResult(
        (
            MemberOutcome("a", 0, 3.5, summary_file="a.json"),
            MemberOutcome("b", 2, 0.4, error="persist: topic 'b' does not exist on 127.0.0.1:9092"),
        ),
        4.1,
    )
    assert [m.stream for m in result.failed()] == ["b"]
    assert FamilyDriverResult.decode(result.encode()) == result
    assert FamilyDriverResult.from_json(result.to_json()) == result


def test_a_triggered_dag_acts_on_its_stream_or_on_a_member_of_its_family_only(tmp_path):
    import copy

    import yaml

    from tidemark.stream_config import read_streams_file
    from tidemark.stream_families import stream_name_for
    from tidemark.topic_listing import refreshed, write_listing
    from tidemark_airflow.dag_target import STREAM_PARAM, triggered_dag_targets

    repo = __import__("pathlib").Path(__file__).resolve().parents[2]
    telemetry = yaml.safe_load((repo / "conf" / "streams.yaml").read_text())["streams"]["telemetry"]
    shape = copy.deepcopy(telemetry)
    del shape["source"]["topic"], shape["source"]["partitions"]
    conf = tmp_path / "streams.yaml"
    conf.write_text(
        yaml.safe_dump({"streams": {"telemetry": telemetry}, "families": {"vans": {"match": "vans.*", **shape}}})
    )
    write_listing(
        tmp_path / "listings" / "vans.json", refreshed(None, "vans", "b:1", {"vans.eu": 1}, 0, stream_name_for)
    )
    environ = {"TIDEMARK_LAKE_ROOT": "/l", "TIDEMARK_CHECKPOINT_ROOT": "/c"}
    own, family = triggered_dag_targets("erase", read_streams_file(conf, environ))

    assert (own.dag_id, own.stream_name, own.refusal("telemetry", "erases from")) == (
        "tidemark_erase__telemetry",
        "telemetry",
        None,
    )
    assert own.refusal("vans_eu", "erases from") == "param 'stream': this DAG erases from 'telemetry', not 'vans_eu'"
    assert (family.dag_id, family.stream_name, family.members) == (
        "tidemark_erase__family__vans",
        STREAM_PARAM,
        ("vans_eu",),
    )
    assert family.refusal("vans_eu", "erases from") is None
    assert family.refusal("telemetry", "erases from") == "param 'stream': 'telemetry' is not a member of family 'vans'"


def test_the_recoveries_of_a_task_mapped_over_members_are_every_succeeded_members():
    from tidemark.recovery_request import RecoveryRequest
    from tidemark_airflow.recovery_trigger import each_members

    def requests_of(result):
        return tuple(RecoveryRequest.from_json(request) for request in result["asks"])

    one = RecoveryRequest.from_json(
        {"stream": "a", "partition": 0, "ranges": [{"start": 1, "end": 5}], "reason": "hole"}
    ).to_json()
    two = RecoveryRequest.from_json(
        {"stream": "b", "partition": 1, "ranges": [{"start": 7, "end": 9}], "reason": "hole"}
    ).to_json()
    # A member whose task failed left no result (None): the others' requests still go out.
    found = each_members(requests_of)([{"asks": [one]}, None, {"asks": []}, {"asks": [two]}])
    assert [(r.stream, r.partition) for r in found] == [("a", 0), ("b", 1)]
    assert each_members(requests_of)(None) == ()
