"""A rich progress bar for long evaluation runs, fed by the runner's per-item callback."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .asking import CallCounter

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(
    total: int, description: str, counters: Mapping[str, CallCounter]
) -> Iterator[Callable[[object], None]]:
    """Yields ``advance(done)``: one more item finished; the bar shows calls made and read from the cache."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[calls]}"),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task(description, total=total, calls="")

        def advance(done: object) -> None:
            made = sum(c.made for c in counters.values())
            cached = sum(c.cached for c in counters.values())
            progress.update(task, advance=1, calls=f"upstream calls {made}, from cache {cached}")

        yield advance
