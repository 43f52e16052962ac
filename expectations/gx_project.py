"""The file-based Great Expectations project the quality checks run in.

One GX project per folder (the caller's ``gx_dir``), shared by every stream and run: a pandas
data source ``tidemark``, and per stream and check family a dataframe asset with a
whole-dataframe batch definition, a suite ``<stream>.<family>``, a validation definition and a
checkpoint. Definitions are written with add-or-update the first time a run validates a
family, so a changed threshold in streams.yaml is what the next run checks. Each family is
validated once per run with ``batch_parameters={"dataframe": facts}`` (a pandas frame of the
family's small fact rows: GX's cost is per run, not per row, and no Spark is involved).

Data Docs are built once per run, after its last validation (``build_data_docs``), for that
run's validation results only: a checkpoint action would rebuild the site's index after every
family. Two runs must not open one project folder at the same time (both rewrite
great_expectations.yml): give each stream its own folder, or serialise the runs (an Airflow
pool of one slot). Data Docs list every validation result kept, so each run first deletes those
older than ``quality.data_docs_keep`` (``prune_results``, expectations.gx_retention).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from expectations.check_family import RULE_KEY, CheckFamily, FamilyOutcome, RuleResult

DATA_SOURCE = "tidemark"
DATA_DOCS_SITE = "local_site"


class GxProject:
    def __init__(self, gx_dir: str | Path):
        # GX's INFO lines and progress bars tell a person reading the task log nothing; its
        # import alone logs about 200 ("Skipping registering function ..."), so quiet it first.
        logging.getLogger("great_expectations").setLevel(logging.WARNING)
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self._gx = gx
        self.root = Path(gx_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self._context = gx.get_context(mode="file", project_root_dir=str(self.root))
        variables = self._context.variables
        bars = variables.progress_bars  # a ProgressBarsConfig when set here, a dict when read back from the file
        bars_on = True if bars is None else (bars.get("globally", True) if isinstance(bars, dict) else bars.globally)
        if bars_on or variables.analytics_enabled is not False:
            variables.progress_bars = ProgressBarsConfig(globally=False)
            variables.analytics_enabled = False
            variables.save()
        # Registered afresh on every open: GX 1.24 hands out assets read back from a file project
        # with a copy of their data source that lacks the context, and validating them fails
        # ("Missing DataContext"). Assets and definitions are re-added below, by name.
        self._replace_spark_source()
        self._source = self._context.data_sources.add_or_update_pandas(DATA_SOURCE)
        self._checkpoints: dict[tuple[str, str], object] = {}
        self._validated: list = []  # this run's result identifiers, for Data Docs

    def _replace_spark_source(self) -> None:
        """Projects written before the checks ran on pandas frames have a Spark data source of the
        same name, which GX refuses to update into a pandas one: it goes (with its assets, which
        only ever held a frame for the length of a validation); suites and results stay."""
        try:
            current = self._context.data_sources.get(DATA_SOURCE)
        except (KeyError, ValueError):
            return
        if getattr(current, "type", None) != "pandas":
            self._context.data_sources.delete(DATA_SOURCE)

    @property
    def data_docs_index(self) -> Path:
        """Data Docs' index.html (it exists once a checkpoint has run)."""
        return self.root / "gx" / "uncommitted" / "data_docs" / DATA_DOCS_SITE / "index.html"

    def validate(self, stream: str, family: CheckFamily, rows: list[tuple], run_name: str) -> FamilyOutcome:
        """Validate the fact ``rows`` (tuples in the family's column order, row_id = their index)
        with the family's suite (build_data_docs() publishes the run's results). Raises
        RuntimeError when an expectation could not be evaluated (a defect, not a data failure)."""
        from great_expectations.core.run_identifier import RunIdentifier

        checkpoint = self._checkpoint(stream, family)
        started = time.monotonic()
        result = checkpoint.run(
            batch_parameters={"dataframe": fact_frame(family, rows)},
            run_id=RunIdentifier(run_name=f"{run_name}.{family.name}"),
        )
        seconds = time.monotonic() - started
        rules = []
        for identifier, suite_result in result.run_results.items():
            self._validated += [identifier, identifier.expectation_suite_identifier]
            for expectation_result in suite_result.results:
                config = expectation_result.expectation_config
                exception = expectation_result.exception_info or {}
                if exception.get("raised_exception"):
                    raise RuntimeError(
                        f"check {stream}.{family.name}: GX could not evaluate {config.type}: "
                        f"{exception.get('exception_message')}"
                    )
                details = expectation_result.result or {}
                row_ids = tuple(int(row["row_id"]) for row in details.get("unexpected_index_list") or [])
                severity = getattr(config, "severity", None) or "critical"
                rules.append(
                    RuleResult(
                        rule=(config.meta or {})[RULE_KEY],
                        severity=str(getattr(severity, "value", severity)),
                        success=bool(expectation_result.success),
                        unexpected_row_ids=row_ids,
                    )
                )
        return FamilyOutcome(family.name, len(rows), tuple(rules), seconds)

    def prune_results(self, keep_ms: int, now: datetime | None = None) -> int:
        """Delete the validation results and Data Docs pages older than ``keep_ms`` before ``now``
        (GX's own clock: the wall clock, UTC), before this run's are built
        (expectations.gx_retention); how many results went."""
        from expectations.gx_retention import prune_validation_results

        now = now or datetime.now(UTC)
        return prune_validation_results(self.root / "gx", now - timedelta(milliseconds=keep_ms))

    def build_data_docs(self) -> Path | None:
        """Render this run's validation results (and the index) into Data Docs, once per run;
        the index's path, or None when the run validated nothing."""
        if not self._validated:
            return None
        self._context.build_data_docs(site_names=[DATA_DOCS_SITE], resource_identifiers=list(self._validated))
        return self.data_docs_index

    def _checkpoint(self, stream: str, family: CheckFamily):
        key = (stream, family.name)
        if key in self._checkpoints:
            return self._checkpoints[key]
        gx = self._gx
        name = f"{stream}.{family.name}"
        asset = next((a for a in self._source.assets if a.name == name), None) or self._source.add_dataframe_asset(name)
        batch = next((b for b in asset.batch_definitions if b.name == "whole"), None) or (
            asset.add_batch_definition_whole_dataframe("whole")
        )
        suite = gx.ExpectationSuite(name=name, expectations=list(family.expectations))
        suite = self._context.suites.add_or_update(suite)
        validation = self._context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=batch, suite=suite)
        )
        checkpoint = self._context.checkpoints.add_or_update(
            gx.Checkpoint(
                name=name,
                validation_definitions=[validation],
                actions=[],
                result_format={
                    "result_format": "COMPLETE",
                    "unexpected_index_column_names": list(family.index_columns),
                },
            )
        )
        self._checkpoints[key] = checkpoint
        return checkpoint


_PANDAS_TYPES = {"INT": "Int32", "BIGINT": "Int64", "STRING": "object"}


def fact_frame(family: CheckFamily, rows: list[tuple]):
    """The fact rows as a pandas frame with the family's column types: integers stay nullable
    integers (a null is not NaN in a float column), text stays text."""
    import pandas as pd

    names = [name for name, _ in family.columns]
    frame = pd.DataFrame.from_records(rows, columns=names)
    return frame.astype({name: _PANDAS_TYPES.get(sql_type, "object") for name, sql_type in family.columns})
