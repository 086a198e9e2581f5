"""Shell text for blocks: quoting, the block layout, and the runnable "copy all" script. No I/O.

Rules (kept identical to the SGLang cookbook explorer so readers see familiar text):
- a value of only `[A-Za-z0-9_@%+=:,./-]` is bare;
- one that also has `$`, `{` or `}` (and nothing else) is double-quoted so placeholders expand;
- anything else is single-quoted, `'` written as `'\\''`; the empty string is `''`.
A block prints as preamble lines, one `K=V \\` line per env entry, `cmd \\`, then one
two-space-indented `--flag v1 v2 \\` line per arg, the last without the backslash.
"""

from __future__ import annotations

import re
import shlex

from .model import Block

_BARE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_EXPANDABLE = re.compile(r"[A-Za-z0-9_@%+=:,./${}-]+")


def quote(value: str) -> str:
    if _BARE.fullmatch(value):
        return value
    if _EXPANDABLE.fullmatch(value):
        return f'"{value}"'
    return "'" + value.replace("'", "'\\''") + "'"


def heredoc(name: str, content: str) -> list[str]:
    """Lines that write `content` to file `name` verbatim (quoted delimiter: no expansion)."""
    tag = "COOKBOOK_EOF"
    while tag in content:
        tag += "_"
    body = content if content.endswith("\n") else content + "\n"
    return [f"cat > {quote(name)} <<'{tag}'", *body.splitlines(), tag]


def command_lines(block: Block) -> list[str]:
    """The env + cmd + args part of a block, one shell line each, joined by `\\` continuations."""
    parts = [f"{k}={quote(v)}" for k, v in block.env.items()]
    parts.append(block.cmd)
    parts.extend("  " + " ".join(quote(x) for x in arg) for arg in block.args)
    return [p + " \\" for p in parts[:-1]] + [parts[-1]]


def format_block(block: Block, with_files: bool = True) -> str:
    """The text a reader copies for one block."""
    lines: list[str] = []
    if with_files:
        for name, content in block.files.items():
            lines.extend(heredoc(name, content))
    lines.extend(block.preamble)
    lines.extend(command_lines(block))
    return "\n".join(lines)


def block_argv(block: Block) -> list[str]:
    """The argv the command lines stand for: `K=V` env words, the cmd words, then the args."""
    argv = [f"{k}={v}" for k, v in block.env.items()]
    argv.extend(shlex.split(block.cmd))
    for arg in block.args:
        argv.extend(arg)
    return argv


def placeholders_in(text: str) -> list[str]:
    """`$NAME` placeholders used in `text`, in first-use order."""
    seen: dict[str, None] = {}
    for name in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", text):
        seen.setdefault(name, None)
    return list(seen)
