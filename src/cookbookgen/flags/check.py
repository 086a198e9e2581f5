"""Check every flag of a cell's worker blocks against the parser of the engine version the cell pins. No I/O.

The parser is emulated as Python's argparse (3.11, `allow_abbrev=True`) reads an option string:
- an exact option string (or `--name=value`) is that option;
- otherwise a `--prefix` of exactly one option string is that option (`abbreviation-only`), a prefix
  of several is refused (`ambiguous-abbreviation`: the server does not start);
- anything else is unrecognised (`unknown-flag`, with the nearest names), or `removed-in` when an
  older catalog of the engine has it.
Then the option's values: a switch given a value (`unexpected-value`), a valued flag given none or
too many (`missing-value` / `unexpected-value`), a value outside its choices (`bad-choice`);
`deprecated` flags (with the replacement their help or action names) still start the server.
A wrapper (`python3 -m dynamo.sglang`) reads its own flags first and hands the rest to the engine.
Each finding is reported once per cell and block.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence, get_args

from ..render.model import Block
from .catalog import Catalog, Option, catalog, engines, history, shipped_versions, version_key

FlagClass = Literal["unknown-flag", "removed-in", "ambiguous-abbreviation", "bad-choice", "missing-value", "unexpected-value",
                    "deprecated", "abbreviation-only", "wrapper-flag", "unknown-version"]
CLASSES: tuple[FlagClass, ...] = get_args(FlagClass)
FAILING: frozenset[FlagClass] = frozenset(CLASSES[:6])   # the server would refuse to start


@dataclass(frozen=True)
class FlagFinding:
    cell: str
    block: str          # the block's role (prefill, decode, agg) or kind
    flag: str           # as published
    cls: FlagClass
    detail: str
    version: str = ""   # the catalog it was checked against, e.g. `sglang 0.5.23`

    def to_json(self) -> dict[str, str]:
        return {"cell": self.cell, "block": self.block, "flag": self.flag, "class": self.cls, "detail": self.detail, "version": self.version}


@dataclass(frozen=True)
class CellCheck:
    """What the check of one cell found, plus what it could not check."""

    cell: str
    versions: dict[str, str]
    findings: tuple[FlagFinding, ...]
    checked_flags: int
    unchecked_blocks: tuple[str, ...]   # titles of the blocks with no catalog for their command
    why: str = ""                       # where the versions come from (flags/engines.yaml), or why there are none

    @property
    def badge(self) -> str:
        """One word for the cell: `flags-fail` (a flag would stop the server), `flags-unchecked` (no
        catalog for the version), `flags-deprecated`, or `flags-ok`."""
        found = {f.cls for f in self.findings}
        if found & FAILING:
            return "flags-fail"
        if "unknown-version" in found or not self.checked_flags:
            return "flags-unchecked"
        return "flags-deprecated" if "deprecated" in found else "flags-ok"

    @property
    def summary(self) -> str:
        """The badge's sentence, naming the flags behind it."""
        versions = ", ".join(f"{e} {v}" for e, v in sorted(self.versions.items()))
        failing = sorted({f"{f.flag} ({f.cls})" for f in self.findings if f.cls in FAILING})
        if failing:
            return f"{len(failing)} flag(s) the pinned {versions} would refuse: {', '.join(failing)}"
        if any(f.cls == "unknown-version" for f in self.findings):
            return f"not checked: no flag catalog for {versions}" if versions else f"not checked: engine version unknown ({self.why})"
        if not self.checked_flags:     # no worker of an engine with a catalog (vLLM, TRT-LLM)
            return "not checked: cookbookgen has no flag catalog for these workers' engine"
        deprecated = sorted({f.flag for f in self.findings if f.cls == "deprecated"})
        tail = f"; deprecated: {', '.join(deprecated)}" if deprecated else ""
        return f"every flag is accepted by {versions}{tail}"


def check_cell(cell: str, image: str | None, blocks: Iterable[Block], engine_version: str | None = None) -> CellCheck:
    """Every flag of the cell's worker blocks, against the catalogs of the versions its image pins
    (`engine_version` replaces the engine's: the last catalog of a block's command)."""
    table = engines()
    versions, why = table.versions(image)
    findings: dict[tuple[str, str, str, str], FlagFinding] = {}
    unchecked: list[str] = []
    checked = 0
    for block in blocks:
        parsers = table.commands.get(block.cmd)
        if block.kind != "worker" or not parsers:
            if block.title not in unchecked:
                unchecked.append(block.title)
            continue
        if engine_version:
            versions = {**versions, parsers[-1]: engine_version}
        engine = catalog(parsers[-1], versions.get(parsers[-1]))
        name = block.role or block.kind
        if engine is None:
            if ("", "", "", "unknown-version") not in findings:     # reported once, for the first such block
                detail = _no_version(parsers[-1], versions.get(parsers[-1]), why, image)
                findings[("", "", "", "unknown-version")] = FlagFinding(cell, name, "", "unknown-version", detail)
            continue
        wrappers = parsers[:-1]
        for arg in block.args:
            checked += 1
            for found in _check_arg(arg, wrappers, versions, engine):
                findings.setdefault((name, found[0], found[1], found[2]), FlagFinding(cell, name, *found))
    return CellCheck(cell, versions, tuple(findings.values()), checked, tuple(unchecked), why)


def check_points(points: Iterable[tuple[str, str | None, Iterable[Block]]], engine_version: str | None = None) -> list[CellCheck]:
    """`check_cell` per cell of (cell id, image, blocks) points, cells in order of first appearance."""
    cells: dict[str, tuple[str | None, list[Block]]] = {}
    for cell, image, blocks in points:
        cells.setdefault(cell, (image, []))[1].extend(blocks)
    return [check_cell(cell, image, blocks, engine_version) for cell, (image, blocks) in cells.items()]


def failing(checks: Sequence[CellCheck]) -> bool:
    return any(f.cls in FAILING for c in checks for f in c.findings)


def _no_version(engine: str, version: str | None, why: str, image: str | None) -> str:
    if version:
        known = ", ".join(shipped_versions().get(engine, ())) or "none"
        return f"no {engine} catalog for version {version} (catalogs: {known}); image {image}"
    return f"{engine} version unknown: {why} (image {image or 'none'}); give --engine-version to check"


Found = tuple[str, FlagClass, str, str]   # flag, class, detail, catalog label


def _check_arg(arg: tuple[str, ...], wrappers: Sequence[str], versions: dict[str, str], engine: Catalog) -> list[Found]:
    flag, values = arg[0], list(arg[1:])
    for wrapper in wrappers:
        own = catalog(wrapper, versions.get(wrapper))
        if own is not None and _match(own, flag)[0] != "unknown":
            return _check_in(own, flag, values)
        if own is None and _match(engine, flag)[0] == "unknown" and any(flag.partition("=")[0] in c.options for c in history(wrapper)):
            return [(flag, "wrapper-flag", f"a flag of the {wrapper} wrapper, whose version the image does not state: not checked", "")]
    return _check_in(engine, flag, values)


def _match(catalog: Catalog, text: str) -> tuple[str, list[str], str | None]:
    """argparse's reading of one option string: (exact|abbreviation|ambiguous|unknown, option strings, explicit value)."""
    if text in catalog.options:
        return "exact", [text], None
    name, eq, value = text.partition("=")
    if eq and name in catalog.options:
        return "exact", [name], value
    if text.startswith("--"):
        hits = sorted(s for s in catalog.options if s.startswith(name))
        if len(hits) > 1:
            return "ambiguous", hits, None
        if hits:
            return "abbreviation", hits, value if eq else None
    return "unknown", [], None


def _check_in(catalog: Catalog, flag: str, values: list[str]) -> list[Found]:
    how, names, explicit = _match(catalog, flag)
    label = catalog.label
    if how == "ambiguous":
        return [(flag, "ambiguous-abbreviation", f"could match {', '.join(names)}; argparse refuses it", label)]
    if how == "unknown":
        return [_unknown(catalog, flag.partition("=")[0])]
    option = catalog.options[names[0]]
    out: list[Found] = []
    if how == "abbreviation":
        out.append((flag, "abbreviation-only", f"accepted only as an abbreviation of {option.name}", label))
    if option.refused:
        out.append((flag, "removed-in", f"{catalog.version}: {option.refused}", label))
    elif option.deprecated:
        out.append((flag, "deprecated", f"use {option.replacement}" if option.replacement else "deprecated, no replacement named", label))
    given = ([explicit] if explicit is not None else []) + values
    out += [(flag, cls, detail, label) for cls, detail in _values(option, given)]
    return out


def _values(option: Option, given: list[str]) -> list[tuple[FlagClass, str]]:
    n, nargs = len(given), option.nargs
    low, high = (nargs, nargs) if isinstance(nargs, int) else {"?": (0, 1), "+": (1, None)}.get(nargs, (0, None))
    if n < low:
        return [("missing-value", f"{option.name} takes {_count(nargs)}; given none" if n == 0 else f"takes {_count(nargs)}; given {n}")]
    if high is not None and n > high:
        return [("unexpected-value", f"{option.name} takes {_count(nargs)}; given {' '.join(given)}")]
    if option.choices is not None:
        bad = [v for v in given if "$" not in v and v not in option.choices]
        if bad:
            return [("bad-choice", f"{' '.join(bad)} is not one of: {', '.join(option.choices)}")]
    return []


def _count(nargs: int | str) -> str:
    return {0: "no value", 1: "one value", "?": "at most one value", "*": "any number of values", "+": "one or more values"}.get(nargs, f"{nargs} values")


def _unknown(catalog: Catalog, name: str) -> Found:
    known = history(catalog.engine)
    older = [c for c in known if version_key(c.version) < version_key(catalog.version)]
    last = next((c for c in reversed(older) if name in c.options), None)
    if last is not None:
        gone = next(c for c in older + [catalog] if version_key(c.version) > version_key(last.version))
        return name, "removed-in", f"{gone.version} (last in {last.version})", catalog.label
    newer = next((c for c in known if version_key(c.version) > version_key(catalog.version) and name in c.options), None)
    near = difflib.get_close_matches(name, sorted(catalog.options), n=3, cutoff=0.6)
    detail = f"did you mean {', '.join(near)}?" if near else "no similar flag"
    if newer is not None:
        detail = f"first in {newer.version}; {detail}"
    return name, "unknown-flag", detail, catalog.label
