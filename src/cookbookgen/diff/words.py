"""Stage 4 of the diff (compare, helper): recipe values as command words, and when two words mean the same. No I/O.

- A recipe value becomes words as srt-slurm passes it: `true` is a bare switch (no words), a list is
  one word per item, a mapping is compact JSON, anything else its text as written (`0.80` stays `0.80`).
- Two words are equal when their text is equal, or both are numbers of equal value (`0.80` = `0.8`,
  `14400` = `14400.0`), or both are booleans of equal value (`True` = `true`), or both parse as JSON
  objects or arrays that are equal (`{"a":1}` = `{"a": 1}`).
- Flag names compare after normalising: `--x` and `x` are one flag; worker flags also through SGLang's
  aliases (`--tp-size` = `--tensor-parallel-size`). `--x_y` and `--x-y` stay two flags: SGLang's and
  Dynamo's parsers (argparse) accept only the spelling they declare. A worker's recipe arg already has
  the spelling srt-slurm passes (`recipes.schema` writes each `_` of its key as `-`); a frontend's arg
  is passed verbatim.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Sequence

from ..render.values import word
from .aliases import field_for_flag

Words = tuple[str, ...]
_BOOLS = {"true": True, "false": False}


def recipe_words(value: Any) -> Words | None:
    """The words a recipe value stands for; `None` when the setting passes no argument at all."""
    if value is None:
        return None
    if value is True:
        return ()
    if isinstance(value, list):
        return tuple(word(v) for v in value)
    return (word(value),)


@lru_cache(maxsize=65536)
def flag_key(name: str, worker: bool) -> str:
    """The key two spellings of one flag share (a spelling with `_` is its own: no alias has one)."""
    flag = "--" + name.strip().lstrip("-")
    return field_for_flag(flag) if worker and "_" not in flag else flag


def parsed_args(args: Sequence[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    """A published command's args as the parser reads them: `--flag=value` is `--flag value`."""
    out = []
    for arg in args:
        name, eq, value = arg[0].partition("=")
        out.append((name, value, *arg[1:]) if eq and name.startswith("--") else tuple(arg))
    return tuple(out)


def words_equal(a: Sequence[str], b: Sequence[str]) -> bool:
    if a == b:          # the usual case, at C speed
        return True
    return len(a) == len(b) and all(word_equal(x, y) for x, y in zip(a, b))


def word_equal(a: str, b: str) -> bool:
    if a == b:
        return True
    for parse in (_number, _boolean, _json):
        x, y = parse(a), parse(b)
        if x is not None and y is not None:
            return x == y
    return False


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if value != value else value  # NaN never equals


def _boolean(text: str) -> bool | None:
    return _BOOLS.get(text.strip().lower())


def _json(text: str) -> object | None:
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def shown(words: Sequence[str] | None) -> str | None:
    """How a report prints an argument's words: `(switch)` for a bare flag, `None` when absent."""
    if words is None:
        return None
    return " ".join(words) if words else "(switch)"
