"""MkDocs hooks (mkdocs.yml ``hooks:``): the pages and files the site builds from the code and the repository.

Run by ``make docs`` (``python -m mkdocs build --strict`` from the repository's root, which puts the
checkout's packages on the import path).
"""

from __future__ import annotations

import json
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from docsite.api_reference import openapi_schema
from docsite.generated import REPOSITORY_PAGES, fill_markers, repository_page

ROOT = Path(__file__).resolve().parent.parent


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """The repository's own pages, and the OpenAPI schema as a file beside the API reference."""
    for source, target in REPOSITORY_PAGES.items():
        files.append(File.generated(config, target, content=repository_page(ROOT / source)))
    files.append(File.generated(config, "api/openapi.json", content=json.dumps(openapi_schema(), indent=1) + "\n"))
    return files


def on_page_markdown(markdown: str, **_: object) -> str:
    return fill_markers(markdown)
