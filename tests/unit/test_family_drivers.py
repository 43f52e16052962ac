"""How a family's tick is dealt into drivers (tidemark_airflow.family_look_operator.dealt) and what
one driver's result says (tidemark.family_persist_result)."""

from __future__ import annotations

from tidemark.family_persist_result import FamilyPersistResult, MemberOutcome
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
    result = FamilyPersistResult(
        (
            MemberOutcome("a", 0, 3.5, summary_file="a.json"),
            MemberOutcome("b", 2, 0.4, error="persist: topic 'b' does not exist on 127.0.0.1:9092"),
        ),
        4.1,
    )
    assert [m.stream for m in result.failed()] == ["b"]
    assert FamilyPersistResult.decode(result.encode()) == result
    assert FamilyPersistResult.from_json(result.to_json()) == result
