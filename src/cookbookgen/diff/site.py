"""Read the commands back out of a built site's HTML. No I/O (the caller passes the page texts).

Each process's code block must say which block it is, on the code element or an ancestor:
`data-cell="<cell id>" data-point="<point id>" data-block="<index in the point's deployment.blocks>"`.
Its text is the block as `render.shell.format_block` prints it (heredocs for config files, preamble
lines, `K=V \\` env lines, `cmd \\`, two-space-indented `--flag value \\` lines); `parse_block_text`
reads that back with `shlex`. Topology (workers, nodes per worker, count) comes from `cookbook.json`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from html.parser import HTMLParser
from typing import Any, Mapping, Sequence

from ..render.model import Block
from .model import PublishedPoint

ATTRS = ("data-cell", "data-point", "data-block")
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC = re.compile(r"cat > (\S+) <<(')?([A-Za-z_]+)\2?$")
Key = tuple[str, str, int]


class _CodeBlocks(HTMLParser):
    """Text of every `<code>` whose element or ancestors carry the three data attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.found: dict[Key, str] = {}
        self.text: list[str] | None = None
        self.key: Key | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        inherited = self.stack[-1][1] if self.stack else {}
        seen = {**inherited, **{k: v or "" for k, v in attrs if k in ATTRS}}
        if tag in VOID:
            return
        self.stack.append((tag, seen))
        if tag == "code" and all(a in seen for a in ATTRS) and seen["data-block"].isdigit():
            self.key = (seen["data-cell"], seen["data-point"], int(seen["data-block"]))
            self.text = []

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            continue  # an element left open (HTML allows it) closes with its parent
        if tag == "code" and self.text is not None and self.key is not None:
            self.found[self.key] = "".join(self.text)
            self.text, self.key = None, None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)


def code_blocks(html: str) -> dict[Key, str]:
    parser = _CodeBlocks()
    parser.feed(html)
    parser.close()
    return parser.found


def parse_block_text(text: str) -> dict[str, object]:
    """cmd, args, env, preamble and files of one block's shell text."""
    lines, files = _strip_heredocs(text.strip("\n").split("\n"))
    lines = _logical_lines(lines)
    start = len(lines) - 1
    while start > 0 and lines[start - 1].endswith(" \\"):
        start -= 1
    preamble = tuple(line for line in lines[:start] if line.strip() and not line.lstrip().startswith("#"))
    body = [line.removesuffix(" \\") for line in lines[start:]]
    env: dict[str, str] = {}
    while len(body) > 1 and _ENV.match(body[0]) and len(shlex.split(body[0])) == 1:
        name, _, value = shlex.split(body.pop(0))[0].partition("=")
        env[name] = value
    cmd = body[0].strip() if body else ""
    args = tuple(tuple(shlex.split(line)) for line in body[1:] if line.strip())
    return {"cmd": cmd, "args": args, "env": env, "preamble": preamble, "files": files}


def _logical_lines(lines: list[str]) -> list[str]:
    """Lines with a quoted value that spans several (a multi-line JSON argument) joined back into one."""
    out: list[str] = []
    pending: list[str] = []
    for line in lines:
        pending.append(line)
        try:
            shlex.split(" ".join(pending).removesuffix(" \\"))
        except ValueError:      # a quote still open: the value goes on on the next line
            continue
        out.append("\n".join(pending))
        pending = []
    return out + pending


def _strip_heredocs(lines: list[str]) -> tuple[list[str], dict[str, str]]:
    out: list[str] = []
    files: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = _HEREDOC.match(lines[i].strip())
        if not m:
            out.append(lines[i])
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == m.group(3)), len(lines))
        body = "\n".join(lines[i + 1 : end]) + "\n"
        files[shlex.split(m.group(1))[0]] = body if m.group(2) else re.sub(r"\\([$`\\])", r"\1", body)
        i = end + 1
    return out, files


def read_site_blocks(points: Sequence[PublishedPoint], pages: Mapping[Any, str]) -> tuple[tuple[PublishedPoint, ...], tuple[str, ...]]:
    """`points` with each block's command replaced by the one the HTML shows, and notes on what was not found."""
    found: dict[Key, str] = {}
    for html in pages.values():
        found.update(code_blocks(html))
    if not found:
        note = ("the site's HTML code blocks carry no data-cell / data-point / data-block attributes; "
                "compared the commands of cookbook.json instead")
        return tuple(points), (note,)
    out = [_from_html(p, found) for p in points]
    missing = sum(1 for p, new in zip(points, out) if new is p)
    notes = (f"{missing} point(s) of cookbook.json have no code blocks in the HTML; compared their cookbook.json commands",) if missing else ()
    return tuple(out), notes


def _from_html(point: PublishedPoint, found: dict[Key, str]) -> PublishedPoint:
    """The point as its page shows it; a block whose code the page leaves out shows no command (the
    point's other blocks are on the page, so the reader cannot copy this one)."""
    keys = [(point.cell, point.point_id or "", i) for i in range(len(point.blocks))]
    if not any(k in found for k in keys):
        return point
    blocks = tuple(_with_text(b, found.get(k, "")) for b, k in zip(point.blocks, keys))
    return replace(point, blocks=blocks)


def _with_text(block: Block, text: str) -> Block:
    parsed = parse_block_text(text)
    return block.model_copy(update={**parsed, "files": parsed["files"] or block.files})
