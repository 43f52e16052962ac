"""Jar groups: what counts as already shipped by pyspark, and when Maven is (not) run."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors import jars


def test_artifact_ids_are_read_from_jar_names_including_digit_segments():
    names = ["jackson-core-2.21.2.jar", "log4j-1.2-api-2.25.4.jar", "zstd-jni-1.5.7-7.jar", "RoaringBitmap-1.6.10.jar"]

    candidates = jars.artifact_candidates(names)

    assert {"jackson-core", "log4j-1.2-api", "zstd-jni", "RoaringBitmap"} <= candidates


def test_pyspark_shipped_artifacts_include_spark_scala_and_jackson():
    shipped = jars._pyspark_artifacts()

    assert {"spark-core_2.13", "scala-library", "jackson-databind", "hadoop-client-api"} <= set(shipped)


def test_jars_root_honours_tidemark_jars_over_the_home():
    assert jars.jars_root({"TIDEMARK_JARS": "/cache/jars", "TIDEMARK_HOME": "/h"}) == Path("/cache/jars")
    assert jars.jars_root({"TIDEMARK_HOME": "/h"}) == Path("/h/jars")
    assert jars.jars_root({}) == Path(__file__).resolve().parents[2] / ".tidemark" / "jars"


def test_a_current_stamp_skips_maven(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(jars, "_require_tools", lambda tools=(): None)
    monkeypatch.setattr(
        jars, "_run_maven", lambda group, root, excluded: (calls.append(group), (root / group / "a-1.jar").touch())
    )

    assert jars.ensure_jars(tmp_path, ["kafka"]) == ["kafka"]
    assert jars.ensure_jars(tmp_path, ["kafka"]) == []
    assert calls == ["kafka"]


def test_a_changed_pom_runs_maven_again_from_an_empty_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(jars, "_require_tools", lambda tools=(): None)
    monkeypatch.setattr(jars, "_run_maven", lambda group, root, excluded: (root / group / "new-2.jar").touch())
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "old-1.jar").touch()
    (tmp_path / "kafka" / jars.STAMP).write_text("a stamp of another pom\n")

    assert jars.ensure_jars(tmp_path, ["kafka"]) == ["kafka"]
    assert [p.name for p in jars.group_jars(tmp_path, "kafka")] == ["new-2.jar"]


def test_missing_maven_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(jars.JarsError, match="apt-get install maven openjdk-17-jdk-headless"):
        jars.ensure_jars(tmp_path, ["kafka"])


def test_spark_jars_lists_a_group_or_says_to_download_it(tmp_path):
    (tmp_path / "delta").mkdir()
    with pytest.raises(jars.JarsError, match="run `tidemark jars` first"):
        jars.spark_jars(tmp_path, ["delta"])
    (tmp_path / "delta" / "delta-spark_2.13-4.4.0.jar").touch()

    assert jars.spark_jars(tmp_path, ["delta"]) == str(tmp_path / "delta" / "delta-spark_2.13-4.4.0.jar")


def test_an_unknown_group_is_rejected(tmp_path):
    with pytest.raises(jars.JarsError, match="Unknown jar group"):
        jars.ensure_jars(tmp_path, ["hbase"])


def test_test_sessions_share_the_checkout_jars_whatever_their_home():
    assert jars.shared_jars_root({"TIDEMARK_HOME": "/tmp/x"}) == jars.REPO_ROOT / ".tidemark" / "jars"
    assert jars.shared_jars_root({"TIDEMARK_JARS": "/cache"}) == Path("/cache")


def test_delta_classpath_is_a_wildcard_under_tidemark_jars_and_says_what_to_do_without_it():
    from connectors.jars import delta_classpath

    assert delta_classpath({"TIDEMARK_JARS": "/opt/tidemark/jars"}) == "/opt/tidemark/jars/delta/*"
    with pytest.raises(jars.JarsError, match=r"TIDEMARK_JARS is not set: run `eval"):
        delta_classpath({})
