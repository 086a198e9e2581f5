"""Writing a file whole or not at all, with the mode the user's umask gives (0644 by default). I/O.

The text goes to a new file beside the target, created as `open` creates files (0666 less the
umask, applied by the system), then renamed over the target: a reader never sees half a file.
(`tempfile.mkstemp` makes 0600 files: `export` wrote private files with it, issue 23.)
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, durable: bool = False, executable: bool = False) -> None:
    """Write `data` (text as UTF-8) to a temporary file beside `path`, then rename it over `path`.
    `durable`: flush it to disk before the rename (for files a user keeps, not for caches);
    `executable`: a script, created 0777 less the umask (0755 by default)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777 if executable else 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
