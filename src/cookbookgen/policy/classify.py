"""Classify every leaf setting of an effective recipe. No I/O.

Every leaf ends in exactly one class with a reason. A setting that no rule matches is kept as
`unclassified` (published when it sits under args/env, reported either way). A `prohibited`
setting is an error naming the file and line that set it.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any, Iterable

from ..errors import CookbookError
from ..recipes.bundle import EffectiveRecipe
from ..recipes.load import KeyPath
from ..recipes.merge import changed_positions
from ..render.model import Setting
from .rules import Policy

RawYaml = Any


def leaves(data: RawYaml, prefix: KeyPath = ()) -> list[tuple[KeyPath, RawYaml]]:
    """Every leaf (scalar, list or empty mapping) with its path; list values are one leaf, except
    lists of mappings (such as `services`), whose items are walked."""
    if isinstance(data, dict) and data:
        out: list[tuple[KeyPath, RawYaml]] = []
        for key, value in data.items():
            out.extend(leaves(value, prefix + (key,)))
        return out
    if isinstance(data, list) and _is_table(data):
        out = []
        for i, value in enumerate(data):
            out.extend(leaves(value, prefix + (i,)))
        return out
    return [(prefix, data)]


def _is_table(data: RawYaml) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(v, dict) for v in data)


def classify(recipe: EffectiveRecipe, policy: Policy) -> list[Setting]:
    """One Setting per leaf, in document order. Raises CookbookError on prohibited settings."""
    settings = _classify_node(recipe.data, (), "", policy)
    if "prohibited" in map(_CLASS, settings):
        raise CookbookError([recipe.problem(_path_of(s.path, recipe), f"prohibited setting: {s.reason}")
                             for s in settings if s.cls == "prohibited"])
    return settings


_CLASS = attrgetter("cls")


def _classify_node(node: RawYaml, path: tuple[str, ...], dotted_path: str, policy: Policy) -> list[Setting]:
    # Merged recipes share untouched subtrees, so a subtree's settings are computed once per run; and
    # a changed mapping (an override made it anew) reuses the settings of every value that is the
    # same object as in the mapping last classified at the same path, with the same keys.
    if isinstance(node, dict) and node:
        key = (id(node), dotted_path)
        hit = policy.memo.get(key)
        if hit is not None and hit[0] is node:
            settings: list[Setting] = hit[1]
            return settings
        last_key = ("classified at", path)
        last = policy.memo.get(last_key)
        keys, values = tuple(node), tuple(node.values())
        layout = (keys, tuple(map(type, keys)))      # with the types: `True` and `1` are equal keys
        todo: Iterable[int]
        if last is not None and last[0] == layout:
            found: list[list[Setting]] = list(last[2])
            todo = changed_positions(values, last[1])
        else:
            found = [[] for _ in keys]
            todo = range(len(keys))
        for i in todo:
            k = keys[i]
            found[i] = _classify_node(values[i], path + (str(k),), f"{dotted_path}.{k}" if dotted_path else str(k), policy)
        out = list(chain.from_iterable(found))
        policy.memo[key] = (node, out)
        policy.memo[last_key] = (layout, values, found)
        return out
    if _is_table(node):
        out = []
        for i, value in enumerate(node):
            out.extend(_classify_node(value, path + (str(i),), f"{dotted_path}[{i}]", policy))
        return out
    key = (id(node), dotted_path)     # a leaf: the same object at the same path classifies the same
    hit = policy.memo.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]  # type: ignore[no-any-return]
    rule = policy.first_match(path, node)
    if rule is None:
        out = [Setting(dotted_path, node, "unclassified", "no rule matches; add one to the policy file")]
    else:
        out = [Setting(dotted_path, node, rule.cls, rule.reason, rule.text, rule.replacement)]
    policy.memo[key] = (node, out)
    return out


def _path_of(dotted_path: str, recipe: EffectiveRecipe) -> KeyPath:
    parts: list[str | int] = []
    for piece in dotted_path.split("."):
        name, *indexes = piece.split("[")
        if name:
            parts.append(name)
        parts.extend(int(i.rstrip("]")) for i in indexes)
    return tuple(parts)
