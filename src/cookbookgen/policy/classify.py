"""Classify every leaf setting of an effective recipe. No I/O.

Every leaf ends in exactly one class with a reason. A setting that no rule matches is kept as
`unclassified` (published when it sits under args/env, reported either way). A `prohibited`
setting is an error naming the file and line that set it.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ..errors import CookbookError
from ..recipes.bundle import EffectiveRecipe
from ..recipes.load import KeyPath

from .rules import Policy, Setting

RawYaml = Any


def leaves(data: RawYaml, prefix: KeyPath = ()) -> list[tuple[KeyPath, RawYaml]]:
    """Every leaf (scalar, list or empty mapping) with its path; list values are one leaf, except
    lists of mappings (such as `services`), whose items are walked."""
    if isinstance(data, dict) and data:
        out: list[tuple[KeyPath, RawYaml]] = []
        for key, value in data.items():
            if isinstance(value, (dict, list)):
                out.extend(leaves(value, prefix + (key,)))
            else:               # a scalar is a leaf: taken here, without a call
                out.append((prefix + (key,), value))
        return out
    if isinstance(data, list) and _is_table(data):
        out = []
        for i, value in enumerate(data):
            out.extend(leaves(value, prefix + (i,)))
        return out
    return [(prefix, data)]


def _is_table(data: RawYaml) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(v, dict) for v in data)


SettingsMemo = dict[tuple[int, str], tuple[RawYaml, list[Setting]]]
"""`classify`'s results shared by the points of a config: the settings of a recipe subtree (by its id
and dotted path), kept with the subtree itself (an id is reused only while the object lives)."""
def classify(recipe: EffectiveRecipe, policy: Policy, memo: SettingsMemo | None = None) -> list[Setting]:
    """One Setting per leaf, in document order. Raises CookbookError on prohibited settings.
    `memo` lets the points of a config share the settings of the subtrees their recipes share."""
    settings = _classify_node(recipe.data, (), "", policy, {} if memo is None else memo)
    if "prohibited" in map(_CLASS, settings):
        raise CookbookError([recipe.problem(_path_of(s.path, recipe), f"prohibited setting: {s.reason}")
                             for s in settings if s.cls == "prohibited"])
    return settings


_CLASS = attrgetter("cls")


def _classify_node(node: RawYaml, path: tuple[str, ...], dotted_path: str, policy: Policy, memo: SettingsMemo) -> list[Setting]:
    # Merged recipes share untouched subtrees (the same objects), so a subtree's settings are computed once.
    key = (id(node), dotted_path)
    hit = memo.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    if isinstance(node, dict) and node:
        out = [s for k, value in node.items()
               for s in _classify_node(value, path + (str(k),), f"{dotted_path}.{k}" if dotted_path else str(k), policy, memo)]
    elif _is_table(node):
        out = [s for i, value in enumerate(node) for s in _classify_node(value, path + (str(i),), f"{dotted_path}[{i}]", policy, memo)]
    else:
        rule = policy.first_match(path, node)
        if rule is None:
            out = [Setting(dotted_path, node, "unclassified", "no rule matches; add one to the policy file")]
        else:
            out = [Setting(dotted_path, node, rule.cls, rule.reason, rule.text, rule.replacement)]
    memo[key] = (node, out)
    return out


def _path_of(dotted_path: str, recipe: EffectiveRecipe) -> KeyPath:
    parts: list[str | int] = []
    for piece in dotted_path.split("."):
        name, *indexes = piece.split("[")
        if name:
            parts.append(name)
        parts.extend(int(i.rstrip("]")) for i in indexes)
    return tuple(parts)
