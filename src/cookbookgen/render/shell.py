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
from typing import Callable

from ..text import one_line
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
    """Lines that write `content` to file `name`.

    Upper-case placeholders (e.g. `$FRONTEND_0_IP` in nginx.conf) are expanded by the shell; every
    other `$` (nginx's own `$request_id`), backslash and backtick is escaped, so the file gets them
    literally. With no placeholder the delimiter is quoted and the body is taken verbatim.
    """
    tag = "COOKBOOK_EOF"
    while tag in content:
        tag += "_"
    body = content if content.endswith("\n") else content + "\n"
    used = placeholders_in(body)
    if not used:
        return [f"cat > {quote(name)} <<'{tag}'", *body.splitlines(), tag]
    names = "|".join(sorted(used, key=len, reverse=True))
    escaped = re.sub(r"[\\`]", lambda m: "\\" + m.group(0), body)
    escaped = re.sub(r"\$(?!(?:" + names + r")\b)", r"\\$", escaped)
    return [f"cat > {quote(name)} <<{tag}", *escaped.splitlines(), tag]


def command_lines(block: Block) -> list[str]:
    """The env + cmd + args part of a block, one shell line each, joined by `\\` continuations."""
    parts = [f"{k}={quote(v)}" for k, v in block.env.items()]
    parts.append(block.cmd)
    parts.extend("  " + " ".join(quote(x) for x in arg) for arg in block.args)
    return [p + " \\" for p in parts[:-1]] + [parts[-1]]


def format_block(block: Block, with_files: bool = True) -> str:
    """The text a reader copies for one block (config files first, as heredocs)."""
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
    for name in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)\b", text):
        seen.setdefault(name, None)
    return list(seen)


def copy_all(blocks: list[Block], heading: list[str], describe: Callable[[str], str | None]) -> str:
    """A bash script of every block, valid as pasted (`bash -n`), placeholders as `export` lines.

    Each placeholder becomes `export NAME="${NAME:?description}"`: fill in the value, or export it
    before pasting; an unset one stops the command with its description instead of running blind.
    """
    texts = [format_block(b) for b in blocks]
    names = [n for n in placeholders_in("\n".join(texts)) if describe(n)]
    lines = ["#!/usr/bin/env bash", *(comment_line(h) for h in heading)]
    if names:
        lines += ["", "# Set these for your cluster (per node where they differ) before running the commands below."]
        lines += [f'export {n}="${{{n}:?{_safe(describe(n) or n)}}}"' for n in names]
    for block, text in zip(blocks, texts):
        lines += ["", block_comment(block), *_instances(block), text]
    return "\n".join(lines) + "\n"


def comment_line(text: str) -> str:
    """One comment line, whatever `text` holds (a model name with a newline must not become a command)."""
    return f"# {one_line(text)}"


def block_comment(block: Block) -> str:
    """The comment line above a block's command: its title and where it runs."""
    return comment_line(block.title + (f" -- {block.where}" if block.where else ""))


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9 ,.:;()/+_-]", "", text)


def _instances(block: Block) -> list[str]:
    """Comment lines spelling out replicas and node ranks of a block."""
    out = []
    workers = block.workers or 1
    npw = block.nodes_per_worker or 1
    for replica in range(workers if (workers > 1 or npw > 1) else 0):
        if npw > 1:
            ranks = ", ".join(f"NODE_RANK={r}" for r in range(npw))
            out.append(f"#   replica {replica}: run on its {npw} nodes with {ranks} (rank 0 on the head node)")
        else:
            out.append(f"#   replica {replica}: run on its own node")
    if (block.count or 1) > 1:
        out += [f"#   instance {i}: on FRONTEND_{i}_IP" for i in range(block.count or 1)]
    return out
