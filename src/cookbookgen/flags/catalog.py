"""The shipped flag catalogs (`catalogs/<engine>-<version>.json`, written by `scripts/flag_catalogs.py`)
and the table `engines.yaml` (image -> engine versions, command -> parsers).

Reads package data only; never downloads anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

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


@dataclass(frozen=True)
class Catalog:
    engine: str
    version: str
    package: str
    sha256: str
    options: dict[str, Option]   # every option string (names and aliases) -> its action

    @property
    def label(self) -> str:
        return f"{self.engine} {self.version}"


def version_key(version: str) -> tuple[int, ...]:
    """`0.5.8.post1` -> (0, 5, 8, 1): release order for the versions the catalogs hold."""
    return tuple(int(n) for n in re.findall(r"\d+", version))


def _catalog(doc: dict[str, Any]) -> Catalog:
    options: dict[str, Option] = {}
    for name, entry in doc["flags"].items():
        choices = entry.get("choices")
        option = Option(name, (name, *entry.get("aliases", ())), entry["nargs"], tuple(choices) if choices is not None else None,
                        bool(entry.get("deprecated")), entry.get("replacement"), entry.get("refused"))
        options.update(dict.fromkeys(option.names, option))
    return Catalog(doc["engine"], doc["version"], doc["package"], doc["sha256"], options)


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


@dataclass(frozen=True)
class ImageRule:
    pattern: re.Pattern[str]
    engines: dict[str, str]
    why: str   # the source of the versions, or why there are none


@dataclass(frozen=True)
class Engines:
    images: tuple[ImageRule, ...]
    commands: dict[str, tuple[str, ...]]

    def versions(self, image: str | None) -> tuple[dict[str, str], str]:
        """The engine versions an image pins (empty when unknown), with the source or the reason."""
        name = (image or "").partition("@")[0]
        for rule in self.images:
            match = rule.pattern.fullmatch(name)
            if match:
                return {e: v.replace("{1}", match.group(1) or "") if match.groups() else v for e, v in rule.engines.items()}, rule.why
        return {}, "no rule of flags/engines.yaml knows this image" if name else "the cell names no image"


@cache
def engines() -> Engines:
    doc = package_yaml("flags/engines.yaml")
    rules = tuple(ImageRule(re.compile(r["pattern"]), {k: str(v) for k, v in (r.get("engines") or {}).items()},
                            str(r.get("source") or r.get("unknown") or "")) for r in doc["images"])
    return Engines(rules, {cmd: tuple(names) for cmd, names in doc["commands"].items()})
