"""Text made safe to print as one line. No I/O."""

from __future__ import annotations

_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7f)}


def one_line(text: str) -> str:
    """`text` with every control character (newline, CR, ESC, ...) written as `\\xNN`, so a value from
    an input stays on its line: of an error message, or of a shell comment, where a newline would end
    the comment and run the rest as a command."""
    return text if text.isprintable() else text.translate(_ESCAPES)
