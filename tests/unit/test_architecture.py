"""The layering of the code, read from every module's imports: the core imports no framework,
and the adapters do not import each other (what two adapters share belongs lower)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# (folder, top-level modules it must never import)
RULES = [
    (
        "tidemark",
        {
            "pyspark",
            "delta",
            "airflow",
            "confluent_kafka",
            "great_expectations",
            "spark_jobs",
            "tidemark_airflow",
            "stack",
            "expectations",
            "connectors",
            "tidemark_cli",
        },
    ),
    ("connectors", {"airflow", "great_expectations", "spark_jobs", "tidemark_airflow", "expectations", "tidemark_cli"}),
    ("plugins", {"spark_jobs", "expectations", "tidemark_cli"}),
    ("spark_jobs", {"airflow", "tidemark_airflow", "expectations", "tidemark_cli"}),
    ("expectations", {"airflow", "tidemark_airflow", "spark_jobs", "tidemark_cli"}),
    # The CLI starts Spark work the way the DAGs do (a DAG run through Airflow's API, or a spawned
    # process), and reads what the jobs leave (reports, the lake) through the core and connectors.
    (
        "tidemark_cli",
        {"pyspark", "delta", "airflow", "great_expectations", "spark_jobs", "tidemark_airflow", "expectations"},
    ),
]


def _imported_top_levels(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("folder, forbidden", RULES, ids=[folder for folder, _ in RULES])
def test_layers_import_only_downwards(folder, forbidden):
    offenders = {
        str(path.relative_to(REPO)): sorted(_imported_top_levels(path) & forbidden)
        for path in sorted((REPO / folder).rglob("*.py"))
        if _imported_top_levels(path) & forbidden
    }
    assert offenders == {}, f"{folder}/ must not import {sorted(forbidden)}"
