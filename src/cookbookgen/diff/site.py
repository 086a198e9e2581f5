"""Stage 1 of the diff (read, helper of `sources`): read the commands back out of a built site's HTML. No I/O (the caller passes the page texts).

Each process's code block must say which block it is, on the code element or an ancestor:
`data-cell="<cell id>" data-point="<point id>" data-block="<index in the point's deployment.blocks>"`.
Its text is the block as `render.shell.format_block` prints it (heredocs for config files, preamble
lines, `K=V \\` env lines, `cmd \\`, two-space-indented `--flag value \\` lines); `parse_block_text`
reads that back with `shlex`. Topology (workers, nodes per worker, count) comes from `cookbook.json`.

Every other form a reader can copy must say the same commands (`copy_findings`): the page's "Copy all"
script (the code block with id `<anchor>-all`), the downloadable `launch-*.sh` (each `_block_<i>()` of
`render.shell.copy_all`, read back the same way) and the blocks of `cookbook.json`; a difference is a
mismatch naming the form and the setting.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any, Mapping, Sequence

from ..render.model import Block
from .model import DIFFERENT, Finding, PublishedPoint

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
        self.by_id: dict[str, str] = {}     # every code element's text, by the id of its nearest element that has one
        self.text: list[str] | None = None
        self.key: Key | None = None
        self.id: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        inherited = self.stack[-1][1] if self.stack else {}
        seen = {**inherited, **{k: v or "" for k, v in attrs if k in ATTRS or k == "id"}}
        if tag in VOID:
            return
        self.stack.append((tag, seen))
        if tag == "code":
            self.text, self.id = [], seen.get("id")
            if all(a in seen for a in ATTRS) and seen["data-block"].isdigit():
                self.key = (seen["data-cell"], seen["data-point"], int(seen["data-block"]))

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            continue  # an element left open (HTML allows it) closes with its parent
        if tag == "code" and self.text is not None:
            if self.key is not None:
                self.found[self.key] = "".join(self.text)
            if self.id is not None:
                self.by_id[self.id] = "".join(self.text)
            self.text, self.key, self.id = None, None, None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)


def code_blocks(html: str) -> dict[Key, str]:
    return _parse(html).found


def code_by_id(html: str) -> dict[str, str]:
    """The text of every code element, by the id of its nearest element that has one (a "Copy all" script
    is the code of `<anchor>-all`)."""
    return _parse(html).by_id


def _parse(html: str) -> _CodeBlocks:
    parser = _CodeBlocks()
    parser.feed(html)
    parser.close()
    return parser


def parse_block_text(text: str) -> dict[str, object]:
    """cmd, args, env, preamble and files of one block's shell text (a new dict, with its own env and files)."""
    parsed = _parsed_text(text)
    return {**parsed, "env": dict(parsed["env"]), "files": dict(parsed["files"])}     # type: ignore[call-overload]


@lru_cache(maxsize=1 << 14)
def _parsed_text(text: str) -> dict[str, object]:
    """`parse_block_text`, read once per text: a site shows each block in its page, its point's "Copy all"
    script and its launch script, and the points of a config share most of their blocks (keyed by the
    text itself; callers get copies)."""
    lines, files = _strip_heredocs(text.strip("\n").split("\n"))
    lines = _logical_lines(lines)
    start = len(lines) - 1
    while start > 0 and lines[start - 1].endswith(" \\"):
        start -= 1
    preamble = tuple(line for line in lines[:start] if line.strip() and not line.lstrip().startswith("#"))
    body = [line.removesuffix(" \\") for line in lines[start:]]
    env: dict[str, str] = {}
    while len(body) > 1 and _ENV.match(body[0]) and len(_split(body[0])) == 1:
        name, _, value = _split(body.pop(0))[0].partition("=")
        env[name] = value
    cmd = body[0].strip() if body else ""
    args = tuple(tuple(_split(line)) for line in body[1:] if line.strip())
    return {"cmd": cmd, "args": args, "env": env, "preamble": preamble, "files": files}


_PLAIN = re.compile(r"[ \t!#-&(-\[\]-~]*")     # printable ASCII, spaces and tabs, but no quote or backslash


def _split(line: str) -> list[str]:
    """`shlex.split(line)`; a line of only plain characters (`_PLAIN`: no quoting, no whitespace but
    spaces and tabs), as most flag lines are, is split on its whitespace directly, which is the same."""
    return line.split() if _PLAIN.fullmatch(line) else shlex.split(line)


def _logical_lines(lines: list[str]) -> list[str]:
    """Lines with a quoted value that spans several (a multi-line JSON argument) joined back into one."""
    out: list[str] = []
    pending: list[str] = []
    for line in lines:
        pending.append(line)
        try:
            _split(" ".join(pending).removesuffix(" \\"))
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


def page_codes(pages: Mapping[Any, str]) -> tuple[dict[Key, str], dict[str, str]]:
    """The code blocks of the pages (`code_blocks`) and their code elements by id (`code_by_id`), each page parsed once."""
    found: dict[Key, str] = {}
    by_id: dict[str, str] = {}
    for html in pages.values():
        parsed = _parse(html)
        found.update(parsed.found)
        by_id.update(parsed.by_id)
    return found, by_id


def read_site_blocks(points: Sequence[PublishedPoint], found: Mapping[Key, str]) -> tuple[tuple[PublishedPoint, ...], tuple[str, ...]]:
    """`points` with each block's command replaced by the one the HTML shows (`found`: the pages' code
    blocks, `page_codes`), and notes on what was not found."""
    if not found:
        note = ("the site's HTML code blocks carry no data-cell / data-point / data-block attributes; "
                "compared the commands of cookbook.json instead")
        return tuple(points), (note,)
    out = [_from_html(p, found) for p in points]
    missing = sum(1 for p, new in zip(points, out) if new is p)
    notes = (f"{missing} point(s) of cookbook.json have no code blocks in the HTML; compared their cookbook.json commands",) if missing else ()
    return tuple(out), notes


def _from_html(point: PublishedPoint, found: Mapping[Key, str]) -> PublishedPoint:
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


# --- the other copyable forms ------------------------------------------------------------------------

_FUNCTION = re.compile(r"_block_(\d+)\(\) \{$")


def script_blocks(text: str) -> dict[int, dict[str, object]]:
    """The blocks of a launch script (`render.shell.copy_all`): each `_block_<i>() { ... }` body read as a
    block's text, without its placeholder checks (`: "${NAME:?...}"`) and the `exec` before the command."""
    lines = text.split("\n")
    out: dict[int, dict[str, object]] = {}
    i = 0
    while i < len(lines):
        start = _FUNCTION.match(lines[i])
        i += 1
        if not start:
            continue
        body: list[str] = []
        while i < len(lines) and lines[i] != "}":
            heredoc = _HEREDOC.match(lines[i].strip())
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == heredoc.group(3)), i) if heredoc else i
            body.extend(lines[i:end + 1])
            i = end + 1
        parsed = parse_block_text("\n".join(line for line in body if not line.startswith('  : "${')))
        parsed["cmd"] = str(parsed["cmd"]).removeprefix("exec ")
        out[int(start.group(1))] = parsed
        i += 1
    return out


_COMPARED = ("cmd", "args", "env", "preamble", "files")


def copy_findings(config: str, point: str, blocks: Sequence[Block], form: str, shown: Mapping[int, Mapping[str, object]] | None) -> list[Finding]:
    """A mismatch for each setting in which a copyable `form` of a point (its Copy-all script, launch script or
    cookbook.json blocks, `shown` by block index; None when the site lacks the form) differs from the commands
    the page shows (`blocks`)."""
    if shown is None:
        return [Finding(config, point, "point", "copy", form, "mismatch", detail="missing from the site",
                        reason="every form of a point's commands a reader can copy is compared")]
    out: list[Finding] = []
    for index, block in enumerate(blocks):
        got = shown.get(index)
        role = block.role or block.kind
        if got is None:
            out.append(Finding(config, point, role, "copy", form, "mismatch", detail=f"block {index} ({block.title}) is missing from it"))
            continue
        want = {"cmd": block.cmd, "args": tuple(map(tuple, block.args)), "env": dict(block.env), "preamble": tuple(block.preamble),
                "files": dict(block.files)}
        out += [_copy_difference(config, point, role, form, key, want[key], got.get(key)) for key in _COMPARED if _normal(got.get(key)) != _normal(want[key])]
    out += [Finding(config, point, "point", "copy", form, "mismatch", detail=f"block {i} is extra in it") for i in shown if i >= len(blocks)]
    return out


def _normal(value: object) -> object:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    return value


def _copy_difference(config: str, point: str, role: str, form: str, key: str, want: object, got: object) -> Finding:
    """One differing field, narrowed to the args or env entries that differ when it is those."""
    if key == "args" and isinstance(want, tuple) and isinstance(got, tuple):
        page, other = {" ".join(map(str, a)) for a in want}, {" ".join(map(str, a)) for a in got}
        want, got = " ".join(sorted(page - other)), " ".join(sorted(other - page))
    elif key == "env" and isinstance(want, dict) and isinstance(got, dict):
        names = sorted(k for k in {*want, *got} if want.get(k) != got.get(k))
        want, got = " ".join(f"{k}={want.get(k)}" for k in names), " ".join(f"{k}={got.get(k)}" for k in names)
    return Finding(config, point, role, "copy", f"{form}: {key}", "mismatch", detail=DIFFERENT, recipe=f"page {want}", cookbook=f"{form} {got}",
                   reason="what a reader copies must be the commands the page shows (and the diff compared)")
