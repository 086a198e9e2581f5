"""Writing a file whole or not at all, with the mode the user's umask gives (0644 by default). I/O.

A temporary file is private (0600) while it is written, then takes the mode an ordinary `open`
would have given it, and is renamed over the target: a reader never sees half a file, and the
file is not left private (`export` wrote 0600 files before, issue 23).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def umask() -> int:
    """The process's umask (read by setting it and setting it back: POSIX has no other way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: str | bytes, durable: bool = False) -> None:
    """Write `data` (text as UTF-8) to a temporary file beside `path`, then rename it over `path`.
    `durable`: flush it to disk before the rename (for files a user keeps, not for caches)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
