"""Turning recipe values into command words, filtered and rewritten by the policy. No I/O."""

from __future__ import annotations

import json
from typing import Any, Iterable, cast

from ..policy.rules import DROPPED, Policy
from ..recipes.load import KeyPath
from ..recipes.merge import changed_positions

RawYaml = Any


def flag(name: str) -> str:
    return name if name.startswith("-") else f"--{name}"


def word(value: RawYaml) -> str:
    """One command word for a YAML value: text as written, mappings as compact JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def arg_tuple(name: str, value: RawYaml) -> tuple[str, ...] | None:
    """`(flag, *values)`; `True` is a bare switch; `None` means no argument."""
    if value is None:
        return None
    if value is True:
        return (flag(name),)
    if isinstance(value, list):
        return (flag(name), *(word(v) for v in value))
    return (flag(name), word(value))


def kept(policy: Policy, path: KeyPath, value: RawYaml) -> tuple[bool, RawYaml]:
    """Whether a recipe setting reaches the command, and the value it shows (placeholders applied)."""
    return _kept(policy, cast("tuple[str, ...]", path) if all(type(p) is str for p in path) else tuple(map(str, path)), value)


def _kept(policy: Policy, path: tuple[str, ...], value: RawYaml) -> tuple[bool, RawYaml]:
    rule = policy.first_match(path, value)
    if rule is None:
        return True, value
    if rule.cls in DROPPED:
        return False, value
    if rule.cls == "placeholder":
        return (rule.replacement is not None), rule.replacement
    return True, value


def kept_args(policy: Policy, prefix: KeyPath, args: dict[str, RawYaml]) -> list[tuple[str, ...]]:
    base = tuple(map(str, prefix))
    memo = policy.memo     # per run: the points of a bundle share most values (the same objects)
    names, values = tuple(args), tuple(args.values())
    last = memo.get(("kept_args at", base))      # the args last seen at this path: an override changes a few
    todo: Iterable[int]
    if last is not None and last[0] == names:
        shown: list[tuple[str, ...] | None] = list(last[2])
        todo = changed_positions(values, last[1])
    else:
        shown, todo = [None] * len(names), range(len(names))
    for i in todo:
        shown[i] = kept_arg(policy, base, names[i], values[i])
    memo[("kept_args at", base)] = (names, values, shown)
    return [a for a in shown if a is not None]


def kept_arg(policy: Policy, base: tuple[str, ...], name: str, value: RawYaml) -> tuple[str, ...] | None:
    """One arg of the args at `base` as the command shows it (None: dropped, or no argument),
    worked out once per run for each value object."""
    key = ("kept_arg", base, name, id(value))
    hit = policy.memo.get(key)
    if hit is None or hit[0] is not value:
        keep, word_of = _kept(policy, base + (str(name),), value)
        hit = policy.memo[key] = (value, arg_tuple(name, word_of) if keep else None)
    return hit[1]


def kept_env(policy: Policy, prefix: KeyPath, env: dict[str, RawYaml]) -> dict[str, str]:
    base = tuple(map(str, prefix))
    memo = policy.memo
    values = tuple(env.values())
    whole = ("kept_env_all", base, tuple(env))        # the same names with the very same values: the same env
    hit = memo.get(whole)
    if hit is not None and not changed_positions(values, hit[0]):
        return dict(hit[1])
    out = {}
    for name, value in env.items():
        key = ("kept_env", base, name, id(value))
        hit = memo.get(key)
        if hit is None or hit[0] is not value:
            keep, shown = _kept(policy, base + (str(name),), value)
            hit = memo[key] = (value, word(shown) if keep and shown is not None else None)
        if hit[1] is not None:
            out[name] = hit[1]
    memo[whole] = (values, out)
    return dict(out)            # callers add to it


def args_from_words(words: Iterable[RawYaml]) -> list[tuple[str, ...]]:
    """Group a service's argv list: `--x=y` splits; a flag takes the following non-flag words."""
    out: list[list[str]] = []
    for raw in words:
        text = word(raw)
        if text.startswith("-"):
            name, eq, value = text.partition("=")
            out.append([name, value] if eq else [name])
        elif out:
            out[-1].append(text)
        else:
            out.append([text])
    return [tuple(a) for a in out]


def args_from_mapping(mapping: dict[str, RawYaml]) -> list[tuple[str, ...]]:
    return [a for a in (arg_tuple(k, v) for k, v in mapping.items()) if a is not None]


def replace_args(base: list[tuple[str, ...]], over: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """`base` with each flag of `over` replaced in place (or appended when new)."""
    out = list(base)
    for arg in over:
        idx = next((i for i, a in enumerate(out) if a[0] == arg[0]), None)
        if idx is None:
            out.append(arg)
        else:
            out[idx] = arg
    return out
