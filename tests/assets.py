"""The scoring assets that `make install` built (`trustgate build-assets` with the default config).

They live in the default data directory (``$TRUSTGATE_DATA_DIR``, else the XDG
data directory), never under the checkout: the tests that need the real
knowledge graph, word vectors or evidence index read them there, and are
skipped where they are not built.
"""

from __future__ import annotations

import os

from scoring.settings import default_data_dir

__all__ = ["DATA_DIR", "assets_built"]

DATA_DIR = default_data_dir(os.environ)


def assets_built() -> bool:
    return (DATA_DIR / "factcheck" / "index").exists() and (DATA_DIR / "consistency" / "vectors.bin").exists()
