"""The shipped flag catalogs (`catalogs/<engine>-<version>.json`, written by `scripts/flag_catalogs.py`),
the release dates (`releases.yaml`, from PyPI, same script) and the table `engines.yaml` (image -> engine
versions or a nightly's date, command -> parsers); `basis` says which catalogs check an engine version.

Reads package data only; never downloads anything.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from ..recipes.load import package_yaml

Nargs = int | str   # argparse's: 0 (a switch), 1 (one value), '?', '*', '+', or a count


@dataclass(frozen=True)
class Option:
    """One parser action: its first name, the names it answers to, what it takes."""

    name: str
    names: tuple[str, ...]
    nargs: Nargs
    choices: tuple[str, ...] | None = None
    deprecated: bool = False
    replacement: str | None = None
    refused: str | None = None   # the parser stops with this message: the flag is retired
    obsolete: tuple[str, ...] = ()   # names kept for an old spelling: they work, but name the option's own


@dataclass(frozen=True)
class Catalog:
    engine: str
    version: str
    package: str
    sha256: str
    options: dict[str, Option]   # every option string (names and aliases) -> its action
    underscores: bool = False    # the parser reads `--a_b` as `--a-b` (vLLM's FlexibleArgumentParser)
    dotted: bool = False         # `--json-flag.key value` sets one key of a JSON-valued flag (vLLM)
    prefixes: tuple[str, ...] = ()   # any flag starting with one of these is taken (dynamo.trtllm's `--trtllm.<key>`)
    abbrev: bool = True          # argparse's allow_abbrev (dynamo.vllm's own parser turns it off)

    @property
    def label(self) -> str:
        return f"{self.engine} {self.version}"


_PEP440 = re.compile(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?")


def version_key(version: str) -> tuple[int, ...]:
    """PEP 440 order for the versions the catalogs and releases hold: `1.3.0.dev1` < `1.3.0rc2` < `1.3.0`
    < `1.3.0.post1`; a text outside that form sorts by its numbers."""
    parts = _PEP440.fullmatch(version)
    if parts is None:
        return tuple(int(n) for n in re.findall(r"\d+", version))
    release = tuple(int(n) for n in parts.group(1).split("."))
    release += (0,) * (5 - len(release))
    phase = {"a": 1, "b": 2, "rc": 3}.get(parts.group(2) or "", 0 if parts.group(5) and not parts.group(4) else 4)
    post = int(parts.group(4)) if parts.group(4) else -1
    dev = int(parts.group(5)) if parts.group(5) else 1 << 62
    return (*release, phase, int(parts.group(3) or 0), post, dev)


def _catalog(doc: dict[str, Any]) -> Catalog:
    options: dict[str, Option] = {}
    for name, entry in doc["flags"].items():
        choices = entry.get("choices")
        option = Option(name, (name, *entry.get("aliases", ())), entry["nargs"], tuple(choices) if choices is not None else None,
                        bool(entry.get("deprecated")), entry.get("replacement"), entry.get("refused"), tuple(entry.get("obsolete", ())))
        options.update(dict.fromkeys(option.names, option))
    parser = doc.get("parser") or {}
    return Catalog(doc["engine"], doc["version"], doc["package"], doc["sha256"], options, bool(parser.get("underscores")),
                   bool(parser.get("dotted")), tuple(doc.get("prefixes") or ()), bool(parser.get("abbrev", True)))


def _folder() -> Any:
    return resources.files("cookbookgen").joinpath("flags/catalogs")


@cache
def shipped_versions() -> dict[str, tuple[str, ...]]:
    """Engine -> the versions it has a catalog for, oldest first (from the file names: nothing is parsed)."""
    found: dict[str, list[str]] = {}
    for item in _folder().iterdir():
        if item.name.endswith(".json"):
            engine, _, version = item.name.removesuffix(".json").rpartition("-")
            found.setdefault(engine, []).append(version)
    return {engine: tuple(sorted(items, key=version_key)) for engine, items in sorted(found.items())}


@cache
def catalog(engine: str, version: str | None) -> Catalog | None:
    """The catalog of one engine version, read when first asked for; None when none is shipped."""
    if version not in shipped_versions().get(engine, ()):
        return None
    return _catalog(json.loads(_folder().joinpath(f"{engine}-{version}.json").read_text(encoding="utf-8")))


def history(engine: str) -> list[Catalog]:
    """Every catalog of the engine, oldest first."""
    return [c for v in shipped_versions().get(engine, ()) if (c := catalog(engine, v)) is not None]


@cache
def renames(engine: str) -> dict[str, tuple[str, str]]:
    """`renames.yaml`: old flag -> (successor, the source that says so)."""
    doc = package_yaml("flags/renames.yaml").get(engine) or {}
    return {old: (str(e["successor"]), str(e["source"])) for old, e in doc.items()}


@dataclass(frozen=True)
class Release:
    version: str
    date: dt.date
    source: str


@cache
def releases(engine: str) -> tuple[Release, ...]:
    """The engine's main-line releases, oldest first: a backport (a release not newer than one published
    before it) is left out, so the releases around a date bracket the main branch of that date."""
    doc = package_yaml("flags/releases.yaml")
    rows = sorted((Release(str(r["version"]), r["date"], str(r["source"])) for r in doc.get(engines().releases.get(engine, engine)) or ()),
                  key=lambda r: (r.date, version_key(r.version)))
    out: list[Release] = []
    for row in rows:
        if not out or version_key(row.version) > version_key(out[-1].version):
            out.append(row)
    return tuple(out)


Kind = Literal["exact", "bracket", "newer-than-catalogs", "approximate", "unknown"]


@dataclass(frozen=True)
class Basis:
    """The catalogs that check one engine of a cell: the version's own (`exact`), the releases around it
    (`bracket`: a nightly's date, or a dev version between two releases), the newest when the build is
    newer than every catalog (`newer-than-catalogs`), the nearest when nothing dates it (`approximate`)."""

    engine: str
    kind: Kind
    catalogs: tuple[Catalog, ...]
    note: str   # how the version was found: the image rule's source, the date, the install pin

    @property
    def label(self) -> str:
        names = "/".join(c.version for c in self.catalogs)
        return f"{self.engine} {names}" if names else f"{self.engine} (no catalog)"

    @property
    def certain(self) -> bool:
        """Whether a refused flag is known to stop the server (exactly or in both releases around it)."""
        return self.kind in ("exact", "bracket")


def basis(engine: str, version: str | None, date: dt.date | None, note: str) -> Basis:
    """The catalogs that check `engine` at `version` (exact or between releases) or at a nightly's `date`.
    Only the catalogs chosen are read (`shipped_versions` names them all without reading one)."""
    shipped = shipped_versions().get(engine, ())
    if not shipped:
        why = engines().unshipped.get(engine)
        return Basis(engine, "unknown", (), f"no {engine} flag catalog is shipped" + (f" ({why})" if why else "") + f"; {note}")
    if version is not None:
        own = catalog(engine, version)
        if own is not None:
            return Basis(engine, "exact", (own,), note)
        return _by_order(engine, version, shipped, note)
    if date is not None:
        return _by_date(engine, date, shipped, note)
    return Basis(engine, "approximate", (_read(engine, shipped[-1]),), f"{note}; checked against the newest catalog, {engine} {shipped[-1]}")


def _read(engine: str, version: str) -> Catalog:
    found = catalog(engine, version)
    assert found is not None        # a shipped version
    return found


def _by_order(engine: str, version: str, shipped: tuple[str, ...], note: str) -> Basis:
    key = version_key(version)
    known = sorted({r.version for r in releases(engine)} | set(shipped), key=version_key)
    before = [v for v in known if version_key(v) < key]
    after = [v for v in known if version_key(v) > key]
    if not after and before and before[-1] == shipped[-1]:
        return Basis(engine, "newer-than-catalogs", (_read(engine, shipped[-1]),), f"{note}; {version} is newer than every catalog")
    pair = (catalog(engine, before[-1]) if before else None, catalog(engine, after[0]) if after else None)
    if pair[0] is not None and pair[1] is not None:
        return Basis(engine, "bracket", (pair[0], pair[1]), f"{note}; {version} lies between the releases {before[-1]} and {after[0]}")
    return Basis(engine, "approximate", _nearest(engine, shipped, key), f"{note}; no catalog for {version} or the releases around it")


def _by_date(engine: str, date: dt.date, shipped: tuple[str, ...], note: str) -> Basis:
    rows = releases(engine)
    before = [r for r in rows if r.date <= date]
    after = [r for r in rows if r.date > date]
    if not after:
        if before and before[-1].version == shipped[-1]:
            return Basis(engine, "newer-than-catalogs", (_read(engine, shipped[-1]),),
                         f"{note}; {date} is after the newest release with a catalog, {before[-1].version}")
        return Basis(engine, "approximate", (_read(engine, shipped[-1]),), f"{note}; no catalog of a release around {date}")
    pair = (catalog(engine, before[-1].version) if before else None, catalog(engine, after[0].version))
    if pair[0] is not None and pair[1] is not None:
        return Basis(engine, "bracket", (pair[0], pair[1]),
                     f"{note}; {date} lies between the releases {before[-1].version} ({before[-1].date}) and {after[0].version} ({after[0].date})")
    return Basis(engine, "approximate", _nearest(engine, shipped, version_key(after[0].version)), f"{note}; no catalog of a release around {date}")


def _nearest(engine: str, shipped: tuple[str, ...], key: tuple[int, ...]) -> tuple[Catalog, ...]:
    older = [v for v in shipped if version_key(v) <= key]
    newer = [v for v in shipped if version_key(v) > key]
    return tuple(_read(engine, v) for v in (older[-1] if older else None, newer[0] if newer else None) if v is not None)


@dataclass(frozen=True)
class ImageRule:
    pattern: re.Pattern[str]
    engines: dict[str, str]
    why: str              # the source of the versions, or why there are none
    nightly: tuple[str, ...] = ()   # engines built from their main branch on the date the pattern's `date` group names
    ships: tuple[str, ...] = ()     # packages the image carries as of that date (the Dynamo of an SGLang nightly)


@dataclass(frozen=True)
class Engines:
    images: tuple[ImageRule, ...]
    commands: dict[str, tuple[str, ...]]
    options_files: dict[str, dict[str, str]]   # first catalog of a command -> flag naming an options file -> its engine
    releases: dict[str, str]                   # catalog -> the package whose releases date it
    unshipped: dict[str, str]                  # engine with no catalog -> why

    def parsers(self, cmd: str) -> tuple[str, ...] | None:
        """The catalogs that read a command's flags: its own entry, else the longest entry it starts with
        followed by a word (`vllm serve MODEL`)."""
        if cmd in self.commands:
            return self.commands[cmd]
        heads = [c for c in self.commands if cmd.startswith(c + " ")]
        return self.commands[max(heads, key=len)] if heads else None

    def versions(self, image: str | None) -> tuple[dict[str, str], str]:
        """The engine versions an image pins (empty when unknown), with the source or the reason."""
        versions, _, why = self.resolve(image)
        return versions, why

    def resolve(self, image: str | None) -> tuple[dict[str, str], dict[str, dt.date], str]:
        """The engine versions an image pins and the build date of the engines it builds nightly, with the
        source or the reason (a date that is no calendar day dates nothing)."""
        name = (image or "").partition("@")[0]
        for rule in self.images:
            match = rule.pattern.fullmatch(name)
            if match:
                versions = {e: v.replace("{1}", match.group(1) or "") if match.groups() else v for e, v in rule.engines.items()}
                day = _day(match.groupdict().get("date"))
                commit, named = match.groupdict().get("commit"), match.groupdict().get("version")
                why = rule.why.replace("{date}", str(day)).replace("{commit}", commit or "").replace("{version}", named or "")
                if day is not None and named is not None and not _latest_release(rule.nightly, named, day):
                    return {}, {}, f"the tag names {named} and {day}, but {named} is not the last release on or before that day, so the day does not bound the build"
                dates = dict.fromkeys(rule.nightly + rule.ships, day) if day is not None else {}
                return versions, dates, why if day is not None or not rule.nightly else f"{why} (its date {match.group('date')} is no calendar day)"
        return {}, {}, "no rule of flags/engines.yaml knows this image" if name else "the cell names no image"


def _latest_release(engines: tuple[str, ...], version: str, day: dt.date) -> bool:
    """Whether `version` is each engine's last release on or before `day` (a tag that names both a version
    and a day is bounded by the releases around the day only then)."""
    return all((before := [r for r in releases(e) if r.date <= day]) and before[-1].version == version for e in engines)


def _day(text: str | None) -> dt.date | None:
    try:
        return dt.datetime.strptime(text, "%Y%m%d").date() if text else None
    except ValueError:
        return None


@cache
def engines() -> Engines:
    doc = package_yaml("flags/engines.yaml")
    rules = tuple(ImageRule(re.compile(r["pattern"]), {k: str(v) for k, v in (r.get("engines") or {}).items()},
                            str(r.get("source") or r.get("unknown") or ""), tuple(r.get("nightly") or ()), tuple(r.get("ships") or ()))
                  for r in doc["images"])
    return Engines(rules, {cmd: tuple(names) for cmd, names in doc["commands"].items()},
                   {k: dict(v) for k, v in (doc.get("options_files") or {}).items()}, dict(doc.get("releases") or {}),
                   {k: " ".join(str(v).split()) for k, v in (doc.get("unshipped") or {}).items()})
