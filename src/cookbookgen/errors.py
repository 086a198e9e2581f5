"""One error type for every bad input: `CookbookError` carrying `Problem` values.

No I/O. Only `cli.main` prints problems (one line each: `file:line: key.path: message`) and maps
them to exit status 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Problem:
    """A located complaint about an input. `line` is 1-based; 0 means the whole file (printed as 1)."""

    file: str
    line: int
    key_path: str
    message: str

    def __str__(self) -> str:
        key = self.key_path or "(top)"
        return f"{self.file}:{max(self.line, 1)}: {key}: {self.message}"


class CookbookError(Exception):
    """Bad input. Holds every problem found before work had to stop."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, file: str, line: int, key_path: str, message: str) -> "CookbookError":
        return cls([Problem(file, line, key_path, message)])


def key_join(parent: str, key: object) -> str:
    """Grow a dotted key path: `roles` + `prefill` -> `roles.prefill`; ints become `[i]`."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)
