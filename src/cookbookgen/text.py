"""Text made safe to print as one line. No I/O."""

from __future__ import annotations

import difflib
from typing import Iterable

_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7f)}
_ESCAPES_BUT_NEWLINE = {c: e for c, e in _ESCAPES.items() if c != 0x0a}


def one_line(text: str) -> str:
    """`text` with every control character (newline, CR, ESC, ...) written as `\\xNN`, so a value from
    an input stays on its line: of an error message, or of a shell comment, where a newline would end
    the comment and run the rest as a command."""
    return text if text.isprintable() else text.translate(_ESCAPES)


def printable(text: str) -> str:
    """`text` with control characters but newline (ESC, CR, ...) written as `\\xNN`, so a hostile
    name cannot drive the terminal; for text that is several lines by design."""
    return text if text.isprintable() else text.translate(_ESCAPES_BUT_NEWLINE)


CHOICES_SHOWN = 8      # names an "unknown" error lists at most
_NAME_MAX = 80         # characters of each name it shows


def unknown(what: str, given: object, valid: Iterable[str]) -> str:
    """The message for a name that is not one of `valid`: "unknown point 'c7'; expected one of: c1, c4, c16"."""
    names = list(valid)
    close = difflib.get_close_matches(str(given), [str(n) for n in names], n=1, cutoff=0.6)
    hint = f" (did you mean {_short(close[0])}?)" if close else ""
    return f"unknown {what} {_short(repr(given))}; " + (f"expected one of: {listing(names, str(given))}{hint}" if names else "there are none")


def listing(valid: Iterable[str], near: str = "") -> str:
    """`valid` for a message, in their order: all of them when few; when more than `CHOICES_SHOWN`,
    the closest few to `near` (difflib) first, the others up to the bound, and the count, so the
    line stays short however many there are."""
    names = list(dict.fromkeys(valid))
    if len(names) <= CHOICES_SHOWN:
        return ", ".join(map(_short, names))
    close = difflib.get_close_matches(near, names, n=3) if near else []
    shown = close + [n for n in names if n not in close][: CHOICES_SHOWN - len(close)]
    return f"{', '.join(map(_short, shown))}, ... ({len(names)} in all{', closest first' if close else ''})"


def _short(name: str) -> str:
    return name if len(name) <= _NAME_MAX else name[: _NAME_MAX - 3] + "..."
