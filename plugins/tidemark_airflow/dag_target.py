"""What a triggered DAG (recover, re-drive, erase, accept-lost) acts on: one declared stream (its own
DAG, as always), or every member of a family (one DAG, the stream a param of the run). The DAG
files build either from one DagTarget, so a family's DAG is the stream's DAG with the stream
chosen per run."""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.dag_ids import family_triggered_dag_id, triggered_dag_id
from tidemark.stream_config import DeclaredStreams, StreamConfig

# The operators' ``stream`` for a family's DAG: the run's param, rendered before the task runs.
STREAM_PARAM = "{{ params.stream }}"


@dataclass(frozen=True)
class DagTarget:
    """``stream``: the declared stream, or the family's template (the settings its members share:
    connections, timeouts, alerts, position type). ``members``: the family's stream names; empty
    for a declared stream."""

    kind: str
    stream: StreamConfig
    family: str | None = None
    members: tuple[str, ...] = ()

    @property
    def dag_id(self) -> str:
        return (
            family_triggered_dag_id(self.kind, self.family) if self.family else triggered_dag_id(self.kind, self.stream)
        )

    @property
    def stream_name(self) -> str:
        """The operators' ``stream``: the stream's name, or the run's param for a family."""
        return STREAM_PARAM if self.family else self.stream.name

    @property
    def tag(self) -> str:
        return self.family or self.stream.name

    @property
    def title(self) -> str:
        """Who the DAG acts on, for its doc."""
        if self.family:
            return f"a member of family `{self.family}` (the `stream` param: one of {len(self.members)})"
        return f"`{self.stream.name}`"

    def stream_param(self):
        """The form's ``stream``: this DAG's stream, or one of the family's members (no default:
        a run names the member it acts on)."""
        from airflow.sdk import Param

        if self.family:
            return Param(type="string", enum=list(self.members), description=f"the member of family {self.family}")
        return Param(self.stream.name, type="string", description="the stream (this DAG's)")

    def refusal(self, requested: str, verb: str) -> str | None:
        """Why a run for stream ``requested`` is not this DAG's; None when it is."""
        if self.family:
            if requested in self.members:
                return None
            return f"param 'stream': {requested!r} is not a member of family {self.family!r}"
        if requested == self.stream.name:
            return None
        return f"param 'stream': this DAG {verb} {self.stream.name!r}, not {requested!r}"


def triggered_dag_targets(kind: str, declared: DeclaredStreams) -> list[DagTarget]:
    """One target per declared stream, and one per family with members."""
    targets = [DagTarget(kind, stream) for stream in declared.outside_families()]
    for family in declared.families_with_members():
        targets.append(DagTarget(kind, family.template, family.rule.name, family.members))
    return targets
