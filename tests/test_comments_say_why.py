"""Code, tests and config say why, never when: they cite no issue numbers and no dates.

An issue number means nothing to a reader of the repository, and a date says when something happened, not
why the code is as it is; that history lives in the commit messages (and, for measurements, in
BENCHMARKS.md and the reports under docs/, which this check leaves alone).

What counts, and what does not (the control tests below pin both):

- an issue cited anywhere in a file, strings included (a report's title is read too): ``issue 32``,
  ``Issue #26``, ``issue-21``, ``issues 20 and 26``, ``PR 7``; not the verb (``it issues a warning``);
- ``#26`` in a comment or docstring; not inside a word or a URL (``wiki:Paris#0``, ``/page#3``), nor an
  all-digit colour in a stylesheet or template (``#333``);
- a date in a comment or docstring (``2026-11-27``, ``27 November 2026``, ``Nov 2026``); a date in data is a
  value, not history (a test's timestamp, ``api_version: '2024-06-01'``), and versions are not dates.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
# Not the project's own text (environments, caches, built assets), or records that may carry dates (docs/).
SKIPPED_DIRS = {
    ".git",
    ".venv",
    ".bench-venv",
    "var",
    "docs",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
}
HASH_COMMENTED = {".yaml", ".yml", ".toml", ".in", ".cfg", ".ini", ".sh"}
SLASH_COMMENTED = {".js", ".css", ".html"}
STYLED = {".css", ".html", ".js"}  # where #333 is a colour

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
ISSUE = re.compile(
    r"\bissue[ -]?#?\d+\b|\bissues (?:#\d+|\d+(?=,| and| &| or))|\b(?:PR|pull request)[ -]?#?\d+\b", re.IGNORECASE
)
ISSUE_HASH = re.compile(r"(?<![\w/&#.:-])#(\d+)\b(?![\w-])")
DATE = re.compile(
    r"\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"
    rf"|\b(?:\d{{1,2}} )?{_MONTH} (?:\d{{1,2}}, )?(?:19|20)\d\d\b"
)


def checked_files(root: Path) -> Iterator[Path]:
    """The files of the kinds checked: Python, YAML, TOML, Makefiles, Dockerfiles, scripts, JS, HTML and CSS."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            path = Path(folder, name)
            if _kind(path) is not None:
                yield path


def _kind(path: Path) -> str | None:
    if path.suffix == ".py":
        return "python"
    if path.suffix in SLASH_COMMENTED:
        return "slash"
    if path.suffix in HASH_COMMENTED or path.name == "Makefile" or path.name.startswith("Dockerfile"):
        return "hash"
    if not path.suffix and _starts_with_shebang(path):
        return "hash"
    return None


def _starts_with_shebang(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(2) == b"#!"
    except OSError:
        return False


def comments(path: Path, text: str) -> list[tuple[int, str]]:
    """(line, text) of each comment and docstring line of a file."""
    kind = _kind(path)
    if kind == "python":
        return _python_comments(text)
    if kind == "slash":
        found = [
            (text.count("\n", 0, m.start()) + 1 + offset, line)
            for m in re.finditer(r"/\*.*?\*/|<!--.*?-->|\{#.*?#\}", text, re.DOTALL)
            for offset, line in enumerate(m.group(0).splitlines())
        ]
        return found + [
            (number, m.group(0))
            for number, line in enumerate(text.splitlines(), 1)
            if (m := re.search(r"(?<![:\w\"'/])//.*$", line))
        ]
    return [
        (number, m.group(1))
        for number, line in enumerate(text.splitlines(), 1)
        if (m := re.search(r"(?:^|\s)#(.*)$", line))
    ]


def _python_comments(text: str) -> list[tuple[int, str]]:
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found += [(first.lineno + offset, line) for offset, line in enumerate(first.value.value.splitlines())]
    return found


def history(path: Path, text: str) -> list[tuple[int, str]]:
    """(line, what was found) for each issue number or date the file cites."""
    found = [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in ISSUE.finditer(text)]
    for number, line in comments(path, text):
        found += [(number, m.group(0)) for m in DATE.finditer(line)]
        found += [
            (number, m.group(0))
            for m in ISSUE_HASH.finditer(line)
            if not (path.suffix in STYLED and len(m.group(1)) in {3, 4, 6, 8})
            and not any(m.group(0) in cited for at, cited in found if at == number)  # "issue #26" once
        ]
    return sorted(set(found))


def test_no_issue_number_or_date_in_code_tests_or_config() -> None:
    """Every checked file but this one, whose examples are history on purpose."""
    cited = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in checked_files(ROOT)
        if path != Path(__file__).resolve()
        for line, what in history(path, path.read_text(encoding="utf-8"))
    ]
    assert cited == []


def test_the_walk_reaches_every_kind_and_skips_records_and_environments() -> None:
    """The rule is only as good as the walk: it reads code, tests, config and templates, not docs/ or the venv."""
    seen = {path.relative_to(ROOT).as_posix() for path in checked_files(ROOT)}
    assert {"tests/test_comments_say_why.py", "Makefile", "pyproject.toml", "deploy/Dockerfile"} <= seen
    assert {".py", ".yaml", ".toml", ".js", ".css", ".html"} <= {Path(p).suffix for p in seen}
    assert not any(p.startswith(("docs/", ".venv/", "var/", ".git/")) for p in seen)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.py", "x = 1  # as issue 32 asked\n", ["issue 32"]),
        ("a.py", '"""Issue #26: the default."""\n', ["Issue #26"]),
        ("a.py", 'TITLE = "the issue-21 set"\n', ["issue-21"]),
        ("a.py", "# issues 20 and 26\n", ["issues 20"]),
        ("a.py", "# see PR 7\n", ["PR 7"]),
        ("a.py", "# fixed in #26\n", ["#26"]),
        ("a.py", 'def f() -> None:\n    """Seen in CI (2026-11-27)."""\n', ["2026-11-27"]),
        ("a.py", "# measured 27 November 2026\n", ["27 November 2026"]),
        ("a.py", "# since Nov 2026\n", ["Nov 2026"]),
        ("a.yaml", "key: 1  # raised on 2026-11-26, see #31\n", ["#31", "2026-11-26"]),
        ("Makefile", "# issue 47: make lint\n", ["issue 47"]),
        ("a.js", "const a = 1; // since issue 40\n", ["issue 40"]),
        ("a.css", "/* 2026-11-20: darker */\n", ["2026-11-20"]),
        ("a.html", "<!-- #12 --><p>{# 2026-01-02 #}</p>\n", ["#12", "2026-01-02"]),
    ],
)
def test_history_is_found_in_comments_docstrings_and_citations(
    tmp_path: Path, name: str, text: str, expected: list[str]
) -> None:
    assert sorted(what for _, what in history(tmp_path / name, text)) == sorted(expected)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.py", 'STAMP = "2026-11-23T10:00:00"  # a timestamp in data\n'),
        ("a.py", "# the store issues a warning, and it issued 3 keys\n"),
        ("a.py", "# passage ids such as wiki:Paris#0, https://example.com/page#3, &#39;\n"),
        ("a.py", "# litellm 1.106.2, HTTP 404 and 429, python3.11\n"),
        ("a.py", "# May cause 2000 retries; the march to 2027 is not a date either\n"),
        ("a.yaml", "api_version: '2024-06-01'\ncolour: '#333'\n"),
        ("a.css", ".x { color: #333; background: #000000 } /* #fff on #1f7a3d */\n"),
        ("a.html", '<a href="https://example.com/#12">x</a>\n'),
        ("a.js", 'const url = "https://example.com/2026-11-27";\n'),
    ],
)
def test_colours_ids_versions_statuses_and_data_are_not_history(tmp_path: Path, name: str, text: str) -> None:
    assert history(tmp_path / name, text) == []
