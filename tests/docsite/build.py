"""Build the docs site as ``make docs`` does, into a folder of the test's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["ROOT", "build_site"]

ROOT = Path(__file__).resolve().parents[2]


def build_site(out: Path, *, strict: bool = True) -> subprocess.CompletedProcess[str]:
    """``mkdocs build`` into ``out``; ``strict``: any warning fails it (a broken link, a missing anchor)."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", *(["--strict"] if strict else []), "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
