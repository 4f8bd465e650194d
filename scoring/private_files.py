"""Files that hold traffic (questions, answers, scores) are the owner's alone: 0600 in a 0700 directory.

The modes are set explicitly rather than left to the umask, so a gateway
started from a shell with ``umask 022`` still writes private files. Files and
directories left group- or world-readable by an older version are tightened,
with a warning, when they are opened again.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from pathlib import Path

__all__ = ["DIRECTORY_MODE", "FILE_MODE", "open_beside_records", "private_directory", "private_file"]

log = logging.getLogger("trustgate.files")

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def private_directory(path: Path) -> Path:
    """Create ``path`` (and missing parents) as 0700, or tighten an existing one that is ours to tighten.

    A directory shared with others — sticky (``/tmp``), another user's, or the
    home directory — is left as it is with a warning: its other contents are
    not ours to hide. The file's own 0600 still protects the data there.
    """
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    for created in missing:
        os.chmod(created, DIRECTORY_MODE)  # mkdir's mode is filtered by the umask; chmod's is not
    if path in missing:
        return path
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 == 0:
        return path
    shared = info.st_mode & stat.S_ISVTX or info.st_uid != os.getuid() or path.resolve() == Path.home().resolve()
    if shared:
        log.warning(
            "%s is open to other users (mode %o); trustgate files in it are 0600 but its listing is "
            "visible: use a private directory for them",
            path,
            stat.S_IMODE(info.st_mode),
        )
    else:
        log.warning(
            "%s was open to other users (mode %o, from an older trustgate?); now 0700", path, stat.S_IMODE(info.st_mode)
        )
        os.chmod(path, DIRECTORY_MODE)
    return path


def private_file(path: Path) -> Path:
    """Make sure ``path`` exists as a 0600 file in a private directory, before anything writes to it.

    A file that exists is read and tightened by its path, never opened: closing a descriptor on a file drops
    every POSIX lock this process holds on it, and SQLite's connections keep theirs that way. Several stores
    share the record store's database (fits, spend, keys); one opening it later must not take the locks of
    those already open, or another process's connection, finding itself the last, deletes the write-ahead log
    they still write to, and never sees their writes again.
    """
    private_directory(path.parent)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:  # nothing has it open yet: created here, with the mode the umask lets through
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE))
        mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode != FILE_MODE:
        if mode & 0o077:
            log.warning("%s was open to other users (mode %o, from an older trustgate?); now 0600", path, mode)
        os.chmod(path, FILE_MODE)
    return path


def open_beside_records(path: Path, schema: str) -> sqlite3.Connection:
    """A connection to the record store's SQLite database (or a file of its own at ``path``), with ``schema``
    applied: the file private, and in the record store's WAL mode, so that its readers and one writer at a time
    share it with every other table kept beside the records (spend, keys made at run time)."""
    private_file(path)
    db = sqlite3.connect(path, timeout=5.0)
    db.execute("PRAGMA journal_mode=WAL")
    with db:
        db.executescript(schema)
    return db
