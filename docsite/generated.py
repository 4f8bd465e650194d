"""What the docs site builds from the repository rather than from docs/: the reference pages' tables, and
the repository's own Markdown files (the README as the home page, CONTRIBUTING, SECURITY, BENCHMARKS).

The repository files stay where a reader of the repository looks for them; the site shows them as they
are, their links into ``docs/`` made relative to the site's root, where those pages are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .api_reference import api_markdown, openapi_schema
from .config_reference import reference_markdown

__all__ = ["MARKERS", "REPOSITORY_PAGES", "fill_markers", "repository_page"]

# Each repository file shown in the site, and its path there: at the site's root, so that links between
# them (README → CONTRIBUTING.md) read the same in both places.
REPOSITORY_PAGES = {
    "README.md": "index.md",
    "CONTRIBUTING.md": "CONTRIBUTING.md",
    "SECURITY.md": "SECURITY.md",
    "BENCHMARKS.md": "BENCHMARKS.md",
}

# A page's line that the build replaces with what the code says.
MARKERS: dict[str, Callable[[], str]] = {
    "<!-- generated: configuration reference -->": reference_markdown,
    "<!-- generated: openapi operations -->": lambda: api_markdown(openapi_schema()),
}

_INTO_DOCS = re.compile(r"\]\(docs/")


def repository_page(path: Path) -> str:
    """A repository file's text as a page at the site's root: ``](docs/x.md)`` becomes ``](x.md)``, and a link to
    another repository page its path in the site (``](README.md)`` becomes ``](index.md)``)."""
    text = _INTO_DOCS.sub("](", path.read_text(encoding="utf-8"))
    for source, target in REPOSITORY_PAGES.items():
        text = text.replace(f"]({source}", f"]({target}")
    return text


def fill_markers(markdown: str) -> str:
    """The page with each marker line replaced by its generated Markdown (built only where a page asks)."""
    for marker, build in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, build())
    return markdown
