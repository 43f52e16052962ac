"""Whether a family member needs a quality check now (tidemark.quality_look): only what can change
a check's answer makes one, and a member's memory of its last check is kept beside its reports."""

from __future__ import annotations

from tidemark.quality_look import LastCheck, check_reason, read_last_check, remember_check

VERSIONS = {"ledger": 12, "events": 9, "seals": 4}
PASSED = LastCheck(dict(VERSIONS), passed=True, checked_at_ms=1_000)


def test_a_member_unchanged_since_a_check_that_passed_with_nothing_new_in_its_log_is_not_checked():
    assert check_reason(PASSED, VERSIONS, log_has_news=None) is None


def test_whatever_can_change_the_answer_makes_a_check_and_says_why():
    assert check_reason(PASSED, VERSIONS, None, hours_asked=2) == "2 sealed hours to check"
    assert check_reason(None, VERSIONS, None) == "no check remembered yet"
    failed = LastCheck(dict(VERSIONS), passed=False, checked_at_ms=1_000)
    assert check_reason(failed, VERSIONS, None) == "its last check did not pass"
    assert (
        check_reason(PASSED, {**VERSIONS, "ledger": 13, "seals": 5}, None)
        == "ledger, seals changed since its last check"
    )
    assert check_reason(PASSED, {**VERSIONS, "events": -1}, None) == "events changed since its last check"
    news = "running the job: partition 2: the log ends at 5120, past the ledger's offset 5000"
    assert check_reason(PASSED, VERSIONS, news) == news


def test_the_memory_is_a_file_beside_the_reports_and_a_broken_one_means_check(tmp_path):
    assert read_last_check(tmp_path, "shops_eu") is None
    remember_check(tmp_path, "shops_eu", PASSED)
    assert read_last_check(tmp_path, "shops_eu") == PASSED
    (tmp_path / "shops_eu" / "last_check.json").write_text("{half")
    assert read_last_check(tmp_path, "shops_eu") is None
