"""Turning recipe values into command words, filtered and rewritten by the policy. No I/O."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from ..policy.rules import DROPPED, Policy
from ..recipes.load import KeyPath

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


def kept(policy: Policy, path: tuple[str, ...], value: RawYaml) -> tuple[bool, RawYaml]:
    """Whether a recipe setting reaches the command, and the value it shows (placeholders applied)."""
    rule = policy.first_match(path, value)
    if rule is None:
        return True, value
    if rule.cls in DROPPED:
        return False, value
    if rule.cls == "placeholder":
        return (rule.replacement is not None), rule.replacement
    return True, value


ValuesMemo = dict[tuple[tuple[str, ...], str, int], tuple[RawYaml, Any]]
"""What a recipe value at a path shows in a command (an arg tuple or an env word; None: nothing), by
the path, the name and the value's id, kept with the value itself: the points of a config share
most values (the same objects)."""


def kept_args(policy: Policy, prefix: KeyPath, args: dict[str, RawYaml], memo: ValuesMemo | None = None) -> list[tuple[str, ...]]:
    """The args at `prefix` as the command shows them (dropped ones and `null`s left out)."""
    base = tuple(map(str, prefix))
    shown = (_shown(policy, base, name, value, memo, arg_tuple) for name, value in args.items())
    return [a for a in shown if a is not None]


def kept_env(policy: Policy, prefix: KeyPath, env: dict[str, RawYaml], memo: ValuesMemo | None = None) -> dict[str, str]:
    """The env at `prefix` as the command shows it (dropped ones and `null`s left out)."""
    base = tuple(map(str, prefix))
    shown = ((name, _shown(policy, base, name, value, memo, _as_env)) for name, value in env.items())
    return {name: text for name, text in shown if text is not None}


def _as_env(name: str, value: RawYaml) -> str | None:
    return None if value is None else word(value)


def _shown(policy: Policy, base: tuple[str, ...], name: str, value: RawYaml, memo: ValuesMemo | None,
           show: Callable[[str, RawYaml], Any]) -> Any:
    key = (base, name, id(value))
    hit = memo.get(key) if memo is not None else None
    if hit is None or hit[0] is not value:
        keep, shown = kept(policy, base + (str(name),), value)
        hit = (value, show(name, shown) if keep else None)
        if memo is not None:
            memo[key] = hit
    return hit[1]


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
