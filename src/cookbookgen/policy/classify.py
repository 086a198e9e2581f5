"""Classify every leaf setting of an effective recipe. No I/O.

Every leaf ends in exactly one class with a reason. A setting that no rule matches is kept as
`unclassified` (published when it sits under args/env, reported either way). A `prohibited`
setting is kept as the benchmarked run used it and flagged (POLICY.md): the cell's page discloses
it and the diff reports it as a mismatch; it is never a refusal to render.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from ..recipes.bundle import EffectiveRecipe
from ..recipes.load import KeyPath

from .rules import GLOB_CHARS, Policy, Setting

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
PathMemo = dict[tuple[int, tuple[str, ...]], tuple[RawYaml, bool]]
"""`may_prohibit`'s results shared by the points of a config: whether a prohibited rule's pattern
matches under a recipe subtree (by its id and the pattern), kept with the subtree itself."""


def classify(recipe: EffectiveRecipe, policy: Policy, memo: SettingsMemo | None = None) -> list[Setting]:
    """One Setting per leaf, in document order (a prohibited one too: see the module docstring).
    `memo` lets the points of a config share the settings of the subtrees their recipes share."""
    return _classify_node(recipe.data, (), "", policy, {} if memo is None else memo)


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


def may_prohibit(recipe: EffectiveRecipe, policy: Policy, memo: PathMemo | None = None) -> bool:
    """Whether some setting of `recipe` could be prohibited: a prohibited rule's path (its `value`
    aside) is in the recipe's tree, or in one of the trees it was merged from (`parts`: every path
    of the recipe is in one of them). False means `classify` finds no prohibited setting; True, that
    only `classify` can tell. Much cheaper than classifying: the trees are searched for the rules'
    paths, not leaf by leaf, and a tree the points share (a bundle's base) is searched once, so a
    point costs the search of its override (`memo`: shared by the points of a config)."""
    trees = recipe.parts if recipe.parts is not None else (recipe.data,)
    memo = {} if memo is None else memo
    return any(_has_path(tree, pattern, memo) for pattern in policy.prohibited for tree in trees)


def _has_path(node: RawYaml, pattern: tuple[str, ...], memo: PathMemo) -> bool:
    """Whether `pattern` (a rule's dotted glob, as `rules.glob_matches` reads it) matches the path of
    a node in the tree under `node`, keyed as `classify` keys them (a table's items by their index).
    Every node has a leaf at or under it, which the rule would cover. Mapping keys are text (the
    YAML builder makes every key text), so a plain key is looked up, not searched for."""
    if not pattern:
        return True
    if not (isinstance(node, dict) and node) and not _is_table(node):
        return all(part == "**" for part in pattern)     # a leaf: only `**` matches no more keys
    key = (id(node), pattern)
    hit = memo.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    head, rest = pattern[0], pattern[1:]
    if head == "**":      # no key, or one more key and `**` again
        found = _anywhere(node, rest, memo)
    elif isinstance(node, dict) and GLOB_CHARS.isdisjoint(head):
        found = head in node and _has_path(node[head], rest, memo)
    else:
        found = any(fnmatchcase(name, head) and _has_path(child, rest, memo) for name, child in _children(node))
    memo[key] = (node, found)
    return found


def _anywhere(node: RawYaml, rest: tuple[str, ...], memo: PathMemo) -> bool:
    """`_has_path(node, ("**", *rest))`: whether `rest` matches at `node` or at a node under it, the
    nodes walked with a stack (a mapping without `rest`'s plain first key is passed over unasked)."""
    plain = rest[0] if rest and rest[0] != "**" and GLOB_CHARS.isdisjoint(rest[0]) else None
    stack = [node]
    while stack:
        here = stack.pop()
        if (plain is None or not isinstance(here, dict) or plain in here) and _has_path(here, rest, memo):
            return True
        stack += _branches(here)
    return False


def _branches(node: RawYaml) -> list[RawYaml]:
    """The children of a mapping or table that have children of their own."""
    values = node.values() if isinstance(node, dict) else node
    return [v for v in values if (isinstance(v, dict) and v) or (isinstance(v, list) and _is_table(v))]


def _children(node: RawYaml) -> list[tuple[str, RawYaml]]:
    """A mapping's or table's children with the key `classify` gives each in a path."""
    if isinstance(node, dict):
        return [(str(k), v) for k, v in node.items()]
    return [(str(i), v) for i, v in enumerate(node)]
