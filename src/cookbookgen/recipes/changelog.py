"""The perf-changelog of a checkout: which PR last touched each config key. No I/O.

The changelog is an append-only YAML list; an entry names config keys exactly or by glob
(`dsv4-fp4-*`). The latest entry that names a key, exactly or by glob, gives its PR. Exact names
are indexed, so a lookup costs one dict access plus the glob entries newer than the exact hit.
`history(key)` lists every entry that names a key (PR, description, the entry's line), oldest first:
what a config's page shows when no manifest gives its provenance.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from .load import Document

_GLOB_CHARS = frozenset("*?[")
_PR = re.compile(r"/pull/(\d+)")


@dataclass(frozen=True)
class Entry:
    """One perf-changelog entry: its position and line, PR (None without a pr-link) and description lines."""

    index: int
    line: int
    pr: int | None
    description: tuple[str, ...]
    keys: tuple[str, ...]

    def names(self, key: str) -> bool:
        return any(k == key or (not _GLOB_CHARS.isdisjoint(k) and fnmatch.fnmatchcase(key, k)) for k in self.keys)


@dataclass(frozen=True)
class Changelog:
    """Config keys -> (entry index, PR) of the last entry naming them exactly, and the glob entries."""

    exact: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    globs: tuple[tuple[int, str, int | None], ...] = ()     # (entry index, pattern, PR), in file order
    entries: tuple[Entry, ...] = ()

    def latest_pr(self, key: str) -> int | None:
        """The PR of the latest entry that names `key` (None: no entry does, or it has no PR link)."""
        best = self.exact.get(key)
        for index, pattern, pr in reversed(self.globs):
            if best is not None and index <= best[0]:
                break
            if fnmatch.fnmatchcase(key, pattern):
                return pr
        return best[1] if best is not None else None

    def history(self, key: str) -> tuple[Entry, ...]:
        """Every entry that names `key`, exactly or by glob, in file order (oldest first)."""
        return tuple(e for e in self.entries if e.names(key))


def read_changelog(doc: Document) -> Changelog:
    """The index of a parsed perf-changelog; a malformed entry is an error naming its line."""
    if not isinstance(doc.data, list):
        raise doc.error((), "perf-changelog must be a list of entries")
    exact: dict[str, tuple[int, int | None]] = {}
    globs: list[tuple[int, str, int | None]] = []
    entries: list[Entry] = []
    for i, entry in enumerate(doc.data):
        if not isinstance(entry, dict) or not isinstance(entry.get("config-keys"), list):
            raise doc.error((i,), "an entry needs a config-keys list")
        m = _PR.search(str(entry.get("pr-link", "")))
        pr = int(m.group(1)) if m else None
        said = entry.get("description")
        lines = tuple(map(str, said)) if isinstance(said, list) else (str(said),) if said else ()
        entries.append(Entry(i, doc.line_of((i,)), pr, lines, tuple(map(str, entry["config-keys"]))))
        for key in map(str, entry["config-keys"]):
            if _GLOB_CHARS.isdisjoint(key):
                exact[key] = (i, pr)
            else:
                globs.append((i, key, pr))
    return Changelog(exact, tuple(globs), tuple(entries))
