"""The front door's links lead somewhere: every relative link in README.md and CHANGELOG.md names a
file or folder of the repository. (The docs site's own links are checked by `mkdocs build --strict`.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# [text](target) and [text](target "title"); images too.
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def relative_links(markdown: str) -> list[str]:
    """The link targets of a Markdown text that name a path (no URL, no bare #anchor), without anchors."""
    targets = _LINK.findall(_FENCE.sub("", markdown))
    return [t.split("#")[0] for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


@pytest.mark.parametrize("document", ["README.md", "CHANGELOG.md"])
def test_every_relative_link_points_at_an_existing_file(document):
    links = relative_links((REPO / document).read_text())

    missing = [link for link in links if not (REPO / link).exists()]
    assert links, f"{document} links nowhere; it is meant to lead into docs/"
    assert not missing, f"{document} links to files that do not exist: {missing}"


def test_links_are_found_outside_code_and_urls_are_not_paths():
    text = '[a](docs/a.md#x) [b](https://example.com) [c](#here) ![d](docs/d.png "D")\n```\n[e](nope.md)\n```\n'

    assert relative_links(text) == ["docs/a.md", "docs/d.png"]
