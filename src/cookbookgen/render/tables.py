"""The rendering tables of `rules/render.yaml`, loaded once. I/O: reads that package file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from operator import itemgetter
from typing import Any, Iterable, Sequence, TypeVar, cast

from ..recipes.load import package_yaml


@dataclass(frozen=True)
class Tables:
    raw: dict[str, Any]

    @property
    def ports(self) -> dict[str, int]:
        return cast(dict[str, int], self.raw["ports"])

    @cached_property
    def launch_order(self) -> dict[str, int]:
        """Each block kind's place in the order blocks are launched."""
        return {kind: i for i, kind in enumerate(self.raw["launch_order"])}

    @cached_property
    def consumed(self) -> tuple[tuple[str, ...], ...]:
        """The recipe sections whose every leaf a command shows (as a flag, an env entry or an options key)."""
        return tuple(tuple(path.split(".")) for path in self.raw["consumed_sections"])

    def command(self, kind: str, frontend: str | None = None) -> str:
        value = self.raw["commands"][kind]
        return cast(str, value[frontend] if isinstance(value, dict) else value)

    def title(self, kind: str, role: str | None = None) -> str:
        value = self.raw["titles"][kind]
        return cast(str, value[role] if isinstance(value, dict) else value)

    def describe_placeholder(self, name: str) -> str | None:
        return describe_placeholder(self.raw, name)


def describe_placeholder(table: dict[str, Any], name: str) -> str | None:
    """What `$name` stands for, by a table's `placeholders` (name -> description) and then its
    `placeholder_patterns` (`{role}`: the lower-cased first of two groups, `{n}`: the last group)."""
    fixed: str | None = table["placeholders"].get(name)
    if fixed:
        return fixed
    for item in table["placeholder_patterns"]:
        m = re.fullmatch(item["pattern"], name)
        if m:
            groups = m.groups()
            role = groups[0].lower() if len(groups) == 2 else ""
            return cast(str, item["description"].format(role=role, n=groups[-1]))
    return None


@lru_cache(maxsize=1)
def tables() -> Tables:
    return Tables(package_yaml("rules/render.yaml"))


Arg = TypeVar("Arg", bound=Sequence[Any])   # `(flag, *values)`, a tuple or (in AgentX block dicts) a list


def order_worker_args(args: Iterable[Arg], lead_flags: Sequence[str] | None = None) -> tuple[Arg, ...]:
    """Lead flags first in their order (`lead_flags`, by default this table's), then the rest
    alphabetically; stable for repeated flags."""
    lead = {flag: i for i, flag in enumerate(tables().raw["lead_flags"] if lead_flags is None else lead_flags)}
    args = list(args)
    first = sorted([a for a in args if a[0] in lead], key=lambda a: lead[a[0]])
    return (*first, *sorted([a for a in args if a[0] not in lead], key=itemgetter(0)))
