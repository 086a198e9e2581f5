"""Classify every leaf setting of an effective recipe. No I/O.

Every leaf ends in exactly one class with a reason. A setting that no rule matches is kept as
`unclassified` (published when it sits under args/env, reported either way). A `prohibited`
setting is an error naming the file and line that set it.
"""

from __future__ import annotations

from typing import Any

from ..errors import CookbookError
from ..recipes.bundle import EffectiveRecipe
from ..recipes.load import KeyPath, dotted
from ..render.model import Setting
from .rules import Policy

RawYaml = Any


def leaves(data: RawYaml, prefix: KeyPath = ()) -> list[tuple[KeyPath, RawYaml]]:
    """Every leaf (scalar, list or empty mapping) with its path; list values are one leaf."""
    if isinstance(data, dict) and data:
        out: list[tuple[KeyPath, RawYaml]] = []
        for key, value in data.items():
            out.extend(leaves(value, prefix + (key,)))
        return out
    if isinstance(data, list) and data and all(isinstance(v, dict) for v in data):
        out = []
        for i, value in enumerate(data):
            out.extend(leaves(value, prefix + (i,)))
        return out
    return [(prefix, data)]


def classify(recipe: EffectiveRecipe, policy: Policy) -> list[Setting]:
    settings: list[Setting] = []
    prohibited = []
    for path, value in leaves(recipe.data):
        rule = policy.first_match(tuple(str(p) for p in path), value)
        if rule is None:
            settings.append(Setting(path=dotted(path), value=value, **{"class": "unclassified"},
                                    reason="no rule matches; add one to the policy file"))
            continue
        if rule.cls == "prohibited":
            prohibited.append(recipe.problem(path, f"prohibited setting: {rule.reason}"))
        settings.append(Setting(path=dotted(path), value=value, **{"class": rule.cls}, reason=rule.reason, rule=rule.text))
    if prohibited:
        raise CookbookError(prohibited)
    return settings


def replacement_for(policy: Policy, path: KeyPath, value: RawYaml) -> str | None:
    rule = policy.first_match(tuple(str(p) for p in path), value)
    return rule.replacement if rule is not None else None


def dropped(policy: Policy, path: KeyPath, value: RawYaml) -> bool:
    rule = policy.first_match(tuple(str(p) for p in path), value)
    return rule is not None and rule.cls in ("harness-only", "default-equivalent")
