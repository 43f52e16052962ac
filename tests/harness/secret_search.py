"""Where a secret shows: the search the secured-Kafka tests run over everything a run left behind.

``SecretSearch`` reads every file under the given folders (as bytes: logs, checkpoints, Delta
commit infos, the tables' Parquet, reports, Airflow's task logs) and the given texts (a command's
output, a page's HTML) and says where any secret appears. A search of the wrong folder finds
nothing and proves nothing, so each search also looks for a ``control``: a string that is not
secret and that the run must have written where the search looks (the topic's name, which
the checkpoint and the task log hold); ``controls_found`` lists where it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SecretSearch:
    secrets: tuple[str, ...] = field(repr=False)  # a failed assert prints the search: never them
    control: str
    files_read: int = 0
    found: list[str] = field(default_factory=list)  # "secret #n in <where>"
    controls_found: list[str] = field(default_factory=list)  # where the control showed

    def __post_init__(self) -> None:
        if not self.secrets or not all(self.secrets) or not self.control:
            raise ValueError("give the search the secrets to look for and a control it must find")

    def folders(self, *folders: Path) -> SecretSearch:
        """Search every file under ``folders``."""
        for folder in folders:
            for path in sorted(Path(folder).rglob("*")):
                if path.is_file():
                    self._look(path.read_bytes(), str(path))
                    self.files_read += 1
        return self

    def texts(self, texts: Mapping[str, str] | Iterable[tuple[str, str]]) -> SecretSearch:
        """Search each text, named by its key (what it is: "task log", "page HTML")."""
        for name, text in dict(texts).items():
            self._look(text.encode(), name)
        return self

    def _look(self, content: bytes, where: str) -> None:
        for number, secret in enumerate(self.secrets):
            if secret.encode() in content:
                self.found.append(f"secret #{number} in {where}")
        if self.control.encode() in content:
            self.controls_found.append(where)
