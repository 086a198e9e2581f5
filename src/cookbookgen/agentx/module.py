"""Parse and print the text of a published AgentX data module. Text only: no file I/O.

A module is either plain JSON or the JSX envelope the cookbook publishes:

    // three comment lines
    export const agentx = { ...JSON, 1-space indent, scalar arrays on one line... };

The object text is read with `recipes.load.parse_json` only (never evaluated). Bad input raises
`CookbookError` with one `Problem` whose line is the 1-based line in the whole text.
`write_module_text` reproduces the published envelope byte for byte.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from ..errors import CookbookError
from ..recipes.load import parse_json

EXPORT_PREFIX = "export const agentx = "
MAX_CELLS = 10_000   # published modules hold tens; each cell costs milliseconds to decode and re-encode
_Scalar = (str, int, float, bool, type(None))


def _header_count(lines: list[str]) -> int:
    """How many leading lines are `//` comments or blank (the envelope header)."""
    n = 0
    while n < len(lines) and (lines[n].lstrip().startswith("//") or not lines[n].strip()):
        n += 1
    return n


def read_header_lines(text: str) -> list[str]:
    """The `//` comment lines before `export const agentx = ` (empty for plain JSON)."""
    lines = text.split("\n")
    return [line for line in lines[: _header_count(lines)] if line.strip()]


def _split_envelope(text: str, file: str) -> tuple[str, int]:
    """The JSON object text and the number of lines before it."""
    if text.lstrip().startswith("{"):
        return text, 0
    lines = text.split("\n")
    skip = _header_count(lines)
    rest = "\n".join(lines[skip:])
    if not rest.startswith(EXPORT_PREFIX):
        raise CookbookError.at(file, skip + 1, "", f"expected `{EXPORT_PREFIX.strip()}` or a JSON object")
    return " " * len(EXPORT_PREFIX) + rest[len(EXPORT_PREFIX):], skip


def check_module(data: object, file: str, text: str = "") -> dict[str, Any]:
    """`data` as a module: an object whose `cells` list holds at most `MAX_CELLS` cells with unique
    string ids (`text`, when given, names the line of a bad cell)."""
    if not isinstance(data, dict):
        raise CookbookError.at(file, 0, "", "the module must be a JSON object")
    if not isinstance(data.get("cells"), list):
        raise CookbookError.at(file, 0, "cells", "missing or not a list")
    if len(data["cells"]) > MAX_CELLS:
        raise CookbookError.at(file, 0, "cells", f"{len(data['cells'])} cells; the limit is {MAX_CELLS}")
    module = ModuleData(data)
    module.cell_lines = tuple(cell_lines(text))
    check_cell_ids([cell.get("id") if isinstance(cell, dict) else None for cell in module["cells"]], file, module.cell_lines)
    return module


def read_module_text(text: str, file: str) -> dict[str, Any]:
    """The module object of a JSX envelope or plain JSON text; `file` only names it in errors."""
    body, offset = _split_envelope(text, file)
    data, end = parse_json(body, file, first_line=offset)
    tail = body[end:].strip()
    if tail not in ("", ";"):
        line = offset + body.count("\n", 0, end) + 1
        raise CookbookError.at(file, line, "", f"unexpected text after the object: {tail[:20]!r}")
    return check_module(data, file, text)


class ModuleData(dict[str, Any]):
    """A decoded module (a plain dict) that remembers the line of each cell in its text, so
    reference errors found while decoding can name `file:line`."""

    cell_lines: tuple[int, ...] = ()


def check_cell_ids(ids: Sequence[object], file: str, lines: Sequence[int] = ()) -> None:
    """Cell ids are what `ref`s, anchors and `show --cell` name: each must be a unique string
    (`lines`, when known, the line of each cell)."""
    seen: dict[str, int] = {}
    for i, cid in enumerate(ids):
        line = lines[i] if i < len(lines) else 0
        if not isinstance(cid, str) or not cid:
            raise CookbookError.at(file, line, f"cells[{i}].id", "every cell needs a string id")
        if cid in seen:
            raise CookbookError.at(file, line, f"cells[{i}].id", f"duplicate cell id {cid!r} (also cells[{seen[cid]}])")
        seen[cid] = i


def cell_lines(text: str) -> list[int]:
    """The 1-based line of each cell's `"id"` in a module written with one key per line (the
    published layout); empty for single-line JSON, where no line can be named."""
    out: list[int] = []
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(r'^ "cells": \[', line):
            inside = True
        elif inside and re.match(r'^ "[^"]+":', line):
            break
        elif inside and re.match(r'^   "id": ', line):
            out.append(number)
    return out


def dumps(value: object, indent: int) -> str:
    """JSON with a 1-space indent; arrays holding only scalars stay on one line."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        pad = " " * (indent + 1)
        items = [f"{pad}{_scalar(str(k))}: {dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list):
        if all(isinstance(v, _Scalar) for v in value):
            return "[" + ", ".join(_scalar(v) for v in value) + "]"
        pad = " " * (indent + 1)
        return "[\n" + ",\n".join(pad + dumps(v, indent + 1) for v in value) + "\n" + " " * indent + "]"
    return _scalar(value)


def _scalar(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_module_text(data: dict[str, Any], header_lines: list[str], trailing_newline: bool = True) -> str:
    """The published JSX envelope: comment lines, `export const agentx = <JSON>;`.

    `trailing_newline` says whether the text ends with `\\n` after the `;` (the published files do).
    """
    head = "".join(("" if line.startswith("//") else "// ") + line + "\n" for line in header_lines)
    return head + EXPORT_PREFIX + dumps(data, 0) + ";" + ("\n" if trailing_newline else "")
