"""Check every flag of a cell's worker blocks against the parser of the engine version the cell runs. No I/O.

The parser is emulated as Python's argparse (3.11, `allow_abbrev=True`) reads an option string:
- an exact option string (or `--name=value`) is that option;
- otherwise a `--prefix` of exactly one option string is that option (`abbreviation-only`), a prefix
  of several is refused (`ambiguous-abbreviation`: the server does not start);
- anything else is unrecognised (`unknown-flag`, with the nearest names), or `removed-in` when an
  older catalog of the engine has it (with its successor, from the catalog or `renames.yaml`).
Then the option's values: a switch given a value (`unexpected-value`), a valued flag given none or
too many (`missing-value` / `unexpected-value`), a value outside its choices (`bad-choice`);
`deprecated` flags (with the replacement their help or action names) still start the server.
A wrapper (`python3 -m dynamo.sglang`) reads its own flags first and hands the rest to the engine.

Which catalogs (`catalog.basis`): the version the image or an install step pins (`exact`); for a nightly
or dev build, the releases around its date or version (`bracket`: a flag refused by both is a finding,
by one only a `bracket-only` warning, and so is one both refuse but the release after them takes: a release
can be cut days before it is published, so the build may be newer than the upper release's code); the newest catalog for a build newer than all of them
(`newer-than-catalogs`) or the nearest when nothing dates the build (`approximate`): then a refused
flag is reported but is not known to stop the server. Each finding is reported once per cell and block.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Literal, Sequence, get_args

from ..render.model import Block
from .catalog import Basis, Catalog, Option, basis, engines, history, renames, shipped_versions, version_key
from .catalog import catalog as load_catalog

FlagClass = Literal["unknown-flag", "removed-in", "ambiguous-abbreviation", "bad-choice", "missing-value", "unexpected-value",
                    "bracket-only", "deprecated", "abbreviation-only", "wrapper-flag", "unknown-version", "newer-than-catalogs",
                    "approximate"]
CLASSES: tuple[FlagClass, ...] = get_args(FlagClass)
FAILING: frozenset[FlagClass] = frozenset(CLASSES[:6])   # the server would refuse to start
_DYNAMO_PIN = re.compile(r"ai-dynamo(?:-runtime)?==([^\s\"']+)")
_DYNAMO_SOURCE = re.compile(r"(?:ai-dynamo/dynamo(?:/commit/|/tree/|\.git@|@)|-C dynamo checkout )([0-9a-f]{7,40})")


@dataclass(frozen=True)
class FlagFinding:
    cell: str
    block: str          # the block's role (prefill, decode, agg) or kind
    flag: str           # as published
    cls: FlagClass
    detail: str
    version: str = ""   # the catalogs it was checked against, e.g. `sglang 0.5.23` or `sglang 0.5.21/0.5.22`
    certain: bool = True   # checked exactly or against both releases around the build: a failing class stops the server

    def to_json(self) -> dict[str, object]:
        return {"cell": self.cell, "block": self.block, "flag": self.flag, "class": self.cls, "detail": self.detail,
                "version": self.version, "certain": self.certain}


@dataclass(frozen=True)
class CellCheck:
    """What the check of one cell found, plus what it could not check."""

    cell: str
    versions: dict[str, str]            # engine -> the catalog versions used (`0.5.21/0.5.22` for a bracket)
    findings: tuple[FlagFinding, ...]
    checked_flags: int
    unchecked_blocks: tuple[str, ...]   # titles of the blocks with no catalog for their command
    why: str = ""                       # where the versions come from (flags/engines.yaml), or why there are none
    bases: tuple[Basis, ...] = ()       # per engine: which catalogs, and how they were chosen
    unchecked_workers: tuple[str, ...] = ()   # worker blocks whose command no catalog reads
    certain_flags: int = 0              # of checked_flags: read against their version or both releases around the build

    @property
    def coverage(self) -> str:
        """`exact` (every worker flag against its version's own catalog), `bracket` (some against the
        releases around a nightly), or `unchecked` (a worker's version or command has no certain catalog)."""
        if self.unchecked_workers or not self.bases or any(not b.certain for b in self.bases):
            return "unchecked"
        return "bracket" if any(b.kind == "bracket" for b in self.bases) else "exact"

    @property
    def badge(self) -> str:
        """One word for the cell: `flags-fail` (a flag would stop the server), `flags-unchecked` (a worker
        flag not checked against its version or the releases around it), `flags-deprecated`, or `flags-ok`."""
        if any(f.cls in FAILING and f.certain for f in self.findings):
            return "flags-fail"
        if self.coverage == "unchecked":
            return "flags-unchecked"
        return "flags-deprecated" if any(f.cls == "deprecated" for f in self.findings) else "flags-ok"

    @property
    def summary(self) -> str:
        """The badge's sentence, naming the flags and the catalogs behind it."""
        used = ", ".join(b.label for b in self.bases) or "no catalog"
        failing = sorted({f"{f.flag} ({f.cls})" for f in self.findings if f.cls in FAILING and f.certain})
        if failing:
            return f"{len(failing)} flag(s) {used} would refuse: {', '.join(failing)}"
        if self.coverage == "unchecked":
            return "not checked: " + "; ".join(self._reasons())
        notes = [f"deprecated: {', '.join(sorted({f.flag for f in self.findings if f.cls == 'deprecated'}))}"] \
            if any(f.cls == "deprecated" for f in self.findings) else []
        if any(f.cls == "bracket-only" for f in self.findings):
            notes.append(f"accepted by only one release around the build: {', '.join(sorted({f.flag for f in self.findings if f.cls == 'bracket-only'}))}")
        if self.unchecked_blocks:
            notes.append(f"no catalog for: {', '.join(self.unchecked_blocks)}")
        how = "the releases around the build, " if self.coverage == "bracket" else ""
        return f"every worker flag is accepted by {how}{used}" + "".join(f"; {n}" for n in notes)

    def _reasons(self) -> list[str]:
        reasons = [f"no flag catalog for the command of {', '.join(self.unchecked_workers)}"] if self.unchecked_workers else []
        reasons += [f"{b.engine}: {b.kind} ({b.label}): {b.note}" for b in self.bases if not b.certain]
        return reasons or ["the cell has no worker block"]


def check_cell(cell: str, image: str | None, blocks: Iterable[Block], engine_version: str | None = None,
               install: Sequence[str] = (), only_certain: bool = False) -> CellCheck:
    """Every flag of the cell's worker blocks, against the catalogs of the versions its image and install
    steps pin, or of the releases around its build (`engine_version` replaces the engine's: the last
    parser of a block's command). `only_certain` (for `diff`, which reports only the flags known to stop
    the server): a block whose engine version is not known exactly or by its releases is counted, not
    read, so its uncertain findings are left out."""
    table = engines()
    blocks = list(blocks)
    steps = tuple(install) + tuple(line for b in blocks for line in b.preamble)
    pinned, dates, why = table.resolve(image)
    chosen: dict[str, Basis] = {}
    findings: dict[tuple[str, str, str, str], FlagFinding] = {}
    unchecked: list[str] = []
    workers: list[str] = []
    checked = certain = 0
    for block in blocks:
        parsers = table.parsers(block.cmd)
        if not parsers:
            into = workers if block.kind == "worker" else unchecked
            if block.title not in into:
                into.append(block.title)
            continue
        chain = []
        for i, engine in enumerate(parsers):
            key = engine if not (engine_version and i == len(parsers) - 1) else f"{engine}={engine_version}"
            if key not in chosen:
                chosen[key] = _basis(engine, engine_version if key != engine else None, pinned, dates, why, steps, image)
            chain.append(chosen[key])
        name = block.role or block.kind
        for arg in block.args:
            owner = table.options_files.get(parsers[0], {}).get(arg[0].partition("=")[0])
            if owner is not None and owner not in chosen:   # the file's keys are that engine's options: checked only with its catalog
                chosen[owner] = _basis(owner, None, pinned, dates, why, steps, image)
            if owner is not None and not chosen[owner].catalogs:
                findings.setdefault((name, arg[0], "", "unknown-version"), FlagFinding(
                    cell, name, arg[0], "unknown-version", f"the options file {' '.join(arg[1:])} holds {owner} options: {chosen[owner].note}",
                    certain=False))
        if not chain[-1].catalogs:
            findings.setdefault(("", "", "", "unknown-version"), FlagFinding(cell, name, "", "unknown-version", chain[-1].note, certain=False))
            continue
        for arg in block.args:
            checked += 1
            if only_certain and not chain[-1].certain:     # no finding of this block could be certain
                continue
            certain += _certain(arg, chain)
            for found in _check_bracketed(arg, chain):
                findings.setdefault((name, found[0], found[1], found[2]), FlagFinding(cell, name, *found))
    for b in chosen.values():
        if b.kind == "newer-than-catalogs" or b.kind == "approximate":
            findings.setdefault(("", b.engine, "", b.kind), FlagFinding(cell, "", "", b.kind, f"{b.label}: {b.note}", b.label, False))
    bases = tuple(sorted(chosen.values(), key=lambda b: b.engine))
    versions = {b.engine: "/".join(c.version for c in b.catalogs) or "unknown" for b in bases}
    return CellCheck(cell, versions, tuple(findings.values()), checked, tuple(unchecked), why, bases, tuple(workers), certain)


def check_points(points: Iterable[tuple[str, str | None, Iterable[Block]]] | Iterable[tuple[str, str | None, Iterable[Block], Sequence[str]]],
                 engine_version: str | None = None, only_certain: bool = False) -> list[CellCheck]:
    """`check_cell` per cell of (cell id, image, blocks[, install steps]) points, cells in order of first appearance."""
    cells: dict[str, tuple[str | None, list[Block], list[str]]] = {}
    for cell, image, blocks, *install in points:
        entry = cells.setdefault(cell, (image, [], []))
        entry[1].extend(blocks)
        entry[2].extend(s for s in (install[0] if install else ()) or () if s not in entry[2])
    return [check_cell(cell, image, blocks, engine_version, install, only_certain) for cell, (image, blocks, install) in cells.items()]


def failing(checks: Sequence[CellCheck]) -> bool:
    return any(f.cls in FAILING and f.certain for c in checks for f in c.findings)


def _basis(engine: str, forced: str | None, pinned: dict[str, str], dates: dict[str, dt.date], why: str,
           steps: Sequence[str], image: str | None) -> Basis:
    """The catalogs for one engine of a cell: `--engine-version`, the image's pin, an install step's pin
    (the Dynamo wrapper), the image's nightly date, else the nearest."""
    if forced and load_catalog(engine, forced) is not None:     # --engine-version names a version of this engine
        return basis(engine, forced, None, "--engine-version")
    if engine in pinned:
        return basis(engine, pinned[engine], None, why)
    package = engines().releases.get(engine, engine)     # the Dynamo wrappers are ai-dynamo's
    day = dates.get(engine) or dates.get(package)
    if package == "ai-dynamo":
        pins = sorted({m for s in steps for m in _DYNAMO_PIN.findall(s)}, key=version_key)
        if pins:
            return basis(engine, pins[-1], None, f"the install step pins ai-dynamo {pins[-1]}")
        source = next((m for s in steps for m in _DYNAMO_SOURCE.findall(s)), None)
        if source is not None:
            found = basis(engine, None, day, f"Dynamo built from source at commit {source[:12]}, which no release dates")
            return Basis(engine, "approximate", found.catalogs, found.note)
        if day is not None:
            return basis(engine, None, day, f"the Dynamo the image of {day} ships (no install step)")
    if day is not None:
        return basis(engine, None, day, why)
    return basis(engine, None, None, f"{engine} version unknown: {why} (image {image or 'none'})")


Found = tuple[str, FlagClass, str, str, bool]   # flag, class, detail, catalogs, certain


def _certain(arg: tuple[str, ...], chain: Sequence[Basis]) -> bool:
    """Whether the flag is read against its version or both releases around the build: a wrapper of
    uncertain version leaves it uncertain only if some release of the wrapper has the flag."""
    name = arg[0].partition("=")[0]
    return chain[-1].certain and all(b.certain or not any(name in c.options for c in history(b.engine)) for b in chain[:-1])


def _check_bracketed(arg: tuple[str, ...], chain: Sequence[Basis]) -> list[Found]:
    """One flag against each side of the chain's catalogs (lower releases together, then upper)."""
    sides = max(len(b.catalogs) for b in chain)
    certain = _certain(arg, chain)
    runs = []
    near = tuple((c.engine, c.version) for b in chain for c in b.catalogs)   # "did you mean" draws on every parser of the chain
    for i in range(sides):
        cats = tuple((c.engine, c.version) if c is not None else None
                     for c in (b.catalogs[min(i, len(b.catalogs) - 1)] if b.catalogs else None for b in chain))
        runs.append(_check_arg_once(arg, cats, near))
    label = " + ".join(b.label for b in chain if b.catalogs)
    if sides == 1:
        return [(f, cls, d, label, certain) for f, cls, d, _ in runs[0]]
    refused = [[r for r in run if r[1] in FAILING] for run in runs]
    out: list[Found] = []
    later = _after_upper(arg, chain, near) if refused[0] and refused[1] else None
    if later is not None:
        f, cls, d, where = refused[1][0]
        out.append((f, "bracket-only", f"{where} and the release before it refuse it ({cls}: {d}), but {later} takes it, and a release "
                                       "can be cut before the day it is published, so the build may have it", label, certain))
    elif refused[0] and refused[1]:
        out += [(f, cls, d, label, certain) for f, cls, d, _ in refused[1]]
    elif refused[0] or refused[1]:
        bad = 0 if refused[0] else 1
        f, cls, d, where = refused[bad][0]
        out.append((f, "bracket-only", f"{where} refuses it ({cls}: {d}); the other release around the build accepts it", label, certain))
    seen = {(f, cls) for f, cls, *_ in out}
    for run in runs:
        for f, cls, d, _ in run:
            if cls not in FAILING and (f, cls) not in seen:
                seen.add((f, cls))
                out.append((f, cls, d, label, certain))
    return out


def _after_upper(arg: tuple[str, ...], chain: Sequence[Basis], near: Near) -> str | None:
    """The release after the upper one around the build, when it takes the flag both around the build refuse: a
    release can be cut from the main branch days before it reaches PyPI (InferenceX ran SGLang's 2026-07-24 nightly
    with --mamba-max-states-per-path, which 0.5.16, published on 07-25, lacks and 0.5.17 has), so the build may be
    newer than the upper release's code. None when there is no such release or it refuses the flag too."""
    nexts: list[tuple[str, str] | None] = []
    named: list[str] = []
    for b in chain:
        upper = b.catalogs[-1] if b.catalogs else None
        if upper is None:
            nexts.append(None)
            continue
        after = [v for v in shipped_versions().get(upper.engine, ()) if version_key(v) > version_key(upper.version)]
        if b.kind == "bracket" and after:
            nexts.append((upper.engine, after[0]))
            named.append(f"{upper.engine} {after[0]}")
        else:
            nexts.append((upper.engine, upper.version))
    if not named or any(cls in FAILING for _, cls, _, _ in _check_arg_once(arg, tuple(nexts), near)):
        return None
    return ", ".join(named)


Near = tuple[tuple[str, str], ...]   # the (engine, version) catalogs whose names a suggestion draws on


@lru_cache(maxsize=65536)
def _check_arg_once(arg: tuple[str, ...], cats: tuple[tuple[str, str] | None, ...], near: Near) -> list[tuple[str, FlagClass, str, str]]:
    """`_check_arg` for (engine, version) pairs: the same flag against the same catalogs is read once (a
    cookbook repeats its flags point after point; an unknown flag's nearest names cost the most)."""
    found = [load_catalog(*c) if c is not None else None for c in cats]
    return _check_arg(arg, found[:-1], found[-1], near)    # type: ignore[arg-type]


def _check_arg(arg: tuple[str, ...], wrappers: Sequence[Catalog | None], engine: Catalog, near: Near = ()) -> list[tuple[str, FlagClass, str, str]]:
    flag, values = arg[0], list(arg[1:])
    for own in wrappers:
        if own is not None and _match(own, flag)[0] != "unknown":
            return _check_in(own, flag, values, near)
        if own is None and _match(engine, flag)[0] == "unknown":
            return [(flag, "wrapper-flag", "no catalog of the wrapper: not checked", "")]
    found = _check_in(engine, flag, values, near)
    if wrappers and found and found[0][1] == "unknown-flag":
        # neither reads it: a flag an older wrapper had is removed there (else the nearest names of every parser)
        for own in wrappers:
            gone = _removed(own, flag.partition("=")[0], near) if own is not None else None
            if gone is not None:
                return [gone]
    return found


@lru_cache(maxsize=16384)
def _nearest(name: str, near: Near) -> tuple[str, ...]:
    """The 3 option strings of those catalogs closest to `name` (difflib, as argparse users expect)."""
    names = sorted({n for key in near if (c := load_catalog(*key)) is not None for n in c.options} - {name})   # not itself (the other release's)
    return tuple(difflib.get_close_matches(name, names, n=3, cutoff=0.6))


def _match(catalog: Catalog, text: str) -> tuple[str, list[str], str | None]:
    """argparse's reading of one option string: (exact|abbreviation|ambiguous|unknown, option strings, explicit value)."""
    if text in catalog.options:
        return "exact", [text], None
    name, eq, value = text.partition("=")
    if eq and name in catalog.options:
        return "exact", [name], value
    if any(name.startswith(p) for p in catalog.prefixes):
        return "prefix", [], value if eq else None
    if catalog.underscores and name.startswith("--") and "_" in name:
        return _match(catalog, name.replace("_", "-") + eq + value)
    if catalog.dotted and name.startswith("--") and "." in name and name.partition(".")[0] in catalog.options:
        return "dotted", [name.partition(".")[0]], value if eq else None
    if text.startswith("--") and catalog.abbrev:
        hits = sorted(s for s in catalog.options if s.startswith(name))
        if len(hits) > 1:
            return "ambiguous", hits, None
        if hits:
            return "abbreviation", hits, value if eq else None
    return "unknown", [], None


Hit = tuple[str, FlagClass, str, str]   # flag, class, detail, catalog label


def _check_in(catalog: Catalog, flag: str, values: list[str], near: Near = ()) -> list[Hit]:
    how, names, explicit = _match(catalog, flag)
    label = catalog.label
    if how == "ambiguous":
        return [(flag, "ambiguous-abbreviation", f"could match {', '.join(names)}; argparse refuses it", label)]
    if how == "unknown":
        return [_unknown(catalog, flag.partition("=")[0], near)]
    if how == "prefix":
        return []
    option = catalog.options[names[0]]
    if how == "dotted":      # one key of a JSON flag: takes one value, whatever the flag's own shape
        return [] if len(values) + (explicit is not None) == 1 else [(flag, "missing-value" if not values else "unexpected-value",
                                                                     f"{flag} takes one value", label)]
    out: list[Hit] = []
    if how == "abbreviation":
        out.append((flag, "abbreviation-only", f"accepted only as an abbreviation of {option.name}", label))
    if flag.partition("=")[0] in option.obsolete:
        out.append((flag, "deprecated", f"an old name kept as an alias; use {option.name}", label))
    if option.refused:
        out.append((flag, "removed-in", f"{catalog.version}: {option.refused}{_successor(catalog, option.name, option.replacement, near)}", label))
    elif option.deprecated:
        named = _successor(catalog, option.name, option.replacement, near)
        out.append((flag, "deprecated", named.removeprefix("; ") if named else "deprecated, no replacement named", label))
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


def _successor(catalog: Catalog, name: str, replacement: str | None, near: Near = ()) -> str:
    """`; use --new` from the engine's source (the replacement a catalog names), else `renames.yaml`
    (with its source); and whether the successor is an option of `catalog` or of another parser of the
    command (`near`: a wrapper's successor may be the engine's flag it hands on)."""
    table = renames(catalog.engine)
    if replacement:
        new, why = replacement, ""
    elif name in table:
        new, why = table[name][0], f" ({table[name][1]})"
    else:
        return ""
    flags = _spelled_out(new.split("=")[0].split(" ")[0])
    parsers = [catalog] + [c for key in near if (c := load_catalog(*key)) is not None and c.engine != catalog.engine]
    missing = [f for f in flags if f.startswith("-") and not any(f in c.options for c in parsers)]
    labels = [c.label for c in parsers]
    if missing and len(missing) == len(flags):
        there = f", which {labels[0]} does not have either" if len(labels) == 1 else f", which neither {' nor '.join(labels)} has"
    else:
        there = f"; {' or '.join(labels)} has no {', '.join(missing)}" if missing else ""
    return f"; use {new}{there}{why}"


_BRACES = re.compile(r"\{([^{}]*)\}")


def _spelled_out(flag: str) -> list[str]:
    """The flags a help text's `--a-{b,c}` names (`--a-b`, `--a-c`); a flag without braces is itself."""
    found = _BRACES.search(flag)
    if found is None:
        return [flag]
    return [f for part in found.group(1).split(",") for f in _spelled_out(flag[:found.start()] + part + flag[found.end():])]


def _removed(catalog: Catalog, name: str, near: Near = ()) -> Hit | None:
    """`removed-in` when an older catalog of the engine has the flag, with its successor or the nearest names."""
    older = [c for c in history(catalog.engine) if version_key(c.version) < version_key(catalog.version)]
    last = next((c for c in reversed(older) if name in c.options), None)
    if last is None:
        return None
    gone = next(c for c in older + [catalog] if version_key(c.version) > version_key(last.version))
    was = last.options[name]
    # the successor: what the source names, else the option the flag was an alias of (same action) if it lives on
    successor = _successor(catalog, name, was.replacement or (was.name if was.name != name and was.name in catalog.options else None), near)
    if not successor:
        close = _nearest(name, near or ((catalog.engine, catalog.version),))
        successor = f"; no successor named; nearest: {', '.join(close)}" if close else "; no successor named"
    return name, "removed-in", f"{gone.version} (last in {last.version}){successor}", catalog.label


def _unknown(catalog: Catalog, name: str, near: Near = ()) -> Hit:
    gone = _removed(catalog, name, near)
    if gone is not None:
        return gone
    newer = next((c for c in history(catalog.engine) if version_key(c.version) > version_key(catalog.version) and name in c.options), None)
    close = _nearest(name, near or ((catalog.engine, catalog.version),))
    detail = f"did you mean {', '.join(close)}?" if close else "no similar flag"
    if newer is not None:
        detail = f"first in {newer.version}; {detail}"
    return name, "unknown-flag", detail, catalog.label
