"""Text made safe to print as one line. No I/O."""

from __future__ import annotations

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
