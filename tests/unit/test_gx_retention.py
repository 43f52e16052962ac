"""expectations.gx_retention deletes the validation results and Data Docs pages older than the
retention, and nothing else of the GX project."""

from __future__ import annotations

from datetime import UTC, datetime

from expectations.gx_retention import prune_validation_results, result_folders

OLD, NEW = "20261125T101500.000001Z", "20261127T235959.999999Z"


def _project(root):
    results, pages = result_folders(root)
    made = []
    for family in ("completeness", "stall"):
        for run, run_time in (("manual__1", OLD), ("scheduled__2", NEW), ("scheduled__3", OLD)):
            result = results / "telemetry" / family / f"{run}.{family}" / run_time / f"tidemark-telemetry.{family}.json"
            page = pages / "telemetry" / family / f"{run}.{family}" / run_time / f"tidemark-telemetry.{family}.html"
            for path in (result, page):
                path.parent.mkdir(parents=True)
                path.write_text("{}")
                made.append(path)
    (results / ".ge_store_backend_id").write_text("store_backend_id = x\n")
    (root / "great_expectations.yml").write_text("config_version: 4\n")
    return made


def test_results_and_pages_older_than_the_retention_go_with_the_run_folders_they_empty(tmp_path):
    made = _project(tmp_path)

    deleted = prune_validation_results(tmp_path, datetime(2026, 11, 27, tzinfo=UTC))

    assert deleted == 4  # two old runs of two families; their pages go too
    kept = sorted(p for p in made if p.exists())
    assert kept == sorted(p for p in made if NEW in str(p))
    results, pages = result_folders(tmp_path)
    assert not (results / "telemetry" / "stall" / "manual__1.stall").exists()  # emptied run folder
    assert (results / ".ge_store_backend_id").exists() and (tmp_path / "great_expectations.yml").exists()
    assert prune_validation_results(tmp_path, datetime(2026, 11, 27, tzinfo=UTC)) == 0


def test_a_project_without_results_yet_is_left_alone(tmp_path):
    assert prune_validation_results(tmp_path, datetime(2026, 11, 27, tzinfo=UTC)) == 0
    assert list(tmp_path.iterdir()) == []
