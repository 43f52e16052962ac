"""Many streams at a glance (tidemark.stream_glance): one line per stream from its last quality
check's memory, worst first, filterable; in `tidemark status` without a stream, and on the
watermark page's index."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from harness.cli_environment import cli_home  # noqa: F401 - the fixture
from tidemark.quality_look import LastCheck, WorstPartition, remember_check
from tidemark.stream_families import stream_name_for
from tidemark.stream_glance import NOT_CHECKED, glance, stream_glances, worst_first
from tidemark.topic_listing import refreshed, write_listing

REPO = Path(__file__).resolve().parents[2]


def _check(status: str, lag: int | None, partition: int = 1, at: int = 1_764_000_000_000) -> LastCheck:
    return LastCheck({}, status in ("OK", "WARN"), at, 4, WorstPartition(partition, status, lag, f"{status} reason"))


def test_lines_are_worst_first_then_largest_lag_then_by_name_and_never_checked_leads():
    lines = worst_first(
        [
            glance("a_ok", None, _check("OK", 0)),
            glance("b_stop", "shops", _check("STOP", 10)),
            glance("c_warn_big", None, _check("WARN", 900)),
            glance("d_warn_small", None, _check("WARN", 5)),
            glance("e_new", "shops", None),
            glance("f_lost", None, _check("LOST", None)),
        ]
    )
    assert [line.stream for line in lines] == ["e_new", "f_lost", "b_stop", "c_warn_big", "d_warn_small", "a_ok"]
    assert lines[0].status == NOT_CHECKED and lines[0].reason == "no quality check has completed yet"
    assert glance("x", None, LastCheck({}, True, 5, 0, None)).status == "OK"


def test_a_filter_matches_name_family_or_status_in_any_case(tmp_path):
    remember_check(tmp_path, "shops_eu", _check("STALL", 40))
    remember_check(tmp_path, "shops_us", _check("OK", 0))
    remember_check(tmp_path, "telemetry", _check("OK", 0))
    families = {"shops_eu": "shops", "shops_us": "shops", "telemetry": None}
    assert [g.stream for g in stream_glances(families, tmp_path, "SHOPS")] == ["shops_eu", "shops_us"]
    assert [g.stream for g in stream_glances(families, tmp_path, "stall")] == ["shops_eu"]
    assert [g.stream for g in stream_glances(families, tmp_path, "")] == ["shops_eu", "shops_us", "telemetry"]


def _family_conf(tmp_path: Path, members: int) -> Path:
    telemetry = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"]
    shape = copy.deepcopy(telemetry)
    del shape["source"]["topic"], shape["source"]["partitions"], shape["offline_devices"]
    conf = tmp_path / "streams.yaml"
    conf.write_text(
        yaml.safe_dump({"streams": {"telemetry": telemetry}, "families": {"shops": {"match": "shop.*", **shape}}})
    )
    topics = {f"shop.{i:03d}": 4 for i in range(members)}
    write_listing(tmp_path / "listings" / "shops.json", refreshed(None, "shops", "b:1", topics, 0, stream_name_for))
    return conf


def test_tidemark_status_without_a_stream_lists_every_stream_worst_first(cli_home, tmp_path, capsys):  # noqa: F811
    from tidemark_cli.commands import main

    conf = _family_conf(tmp_path, 3)
    remember_check(cli_home / "reports", "shop_001", _check("STOP", 1234, partition=2))
    remember_check(cli_home / "reports", "shop_000", _check("OK", 0))
    remember_check(cli_home / "reports", "telemetry", _check("WARN", 7))

    assert main(["--conf", str(conf), "status"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert lines[0].startswith("4 streams, worst first")
    assert [line.split()[0] for line in lines[1:]] == ["shop_002", "shop_001", "telemetry", "shop_000"]
    assert "NOT CHECKED" in lines[1] and "STOP" in lines[2] and "partition 2" in lines[2] and "lag 1,234" in lines[2]

    assert main(["--conf", str(conf), "status", "--filter", "stop"]) == 0
    out = capsys.readouterr().out
    assert "1 of 4 streams" in out and "shop_001" in out and "shop_000" not in out


def test_the_index_page_of_200_streams_is_one_row_each_worst_first_and_filterable(tmp_path, monkeypatch):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from tidemark_airflow.watermark_page import create_app

    conf = _family_conf(tmp_path, 199)
    reports = tmp_path / "reports"
    for i in range(199):
        remember_check(reports, f"shop_{i:03d}", _check("OK", i))
    remember_check(reports, "shop_150", _check("STALL", 99, partition=3))
    monkeypatch.setenv("TIDEMARK_LAKE_ROOT", str(tmp_path / "lake"))
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", str(tmp_path / "checkpoints"))
    client = TestClient(create_app(str(conf), reports, require_login=False))

    page = client.get("/").text
    assert page.count("<tr data-stream=") == 200
    assert page.index('data-stream="telemetry"') < page.index('data-stream="shop_150"'), "never checked first"
    assert (
        page.index('data-stream="shop_150"')
        < page.index('data-stream="shop_198"')
        < page.index('data-stream="shop_000"')
    )
    assert "200 streams: 1 NOT CHECKED · 1 STALL · 198 OK" in page
    filtered = client.get("/", params={"q": "stall"}).text
    assert filtered.count("<tr data-stream=") == 1 and "1 of 200 streams" in filtered
