"""Pure data operations on recipe trees: deep merge, zip expansion, sweeps, --set/--unset.

No I/O. Every function returns new values and never mutates its inputs; results may share untouched
subtrees with the inputs, so recipe trees are treated as immutable.

Merge rules (`deep_merge(base, over)`):
- mapping + mapping: merge key by key, recursively;
- a list replaces whatever was there (lists are never concatenated);
- a scalar replaces whatever was there;
- `None` (YAML `null`) deletes the key from the result (also inside a mapping the base lacks);
  with `keep_nulls` (a bundle's `base` over the file's top-level keys) it is kept as a value:
  only an override's `null` deletes (TRT-LLM reads an explicit `null` as "feature off").
Merging is associative as long as no key is a mapping in one layer and a scalar or list in another.

Zip rules (`zip_length(section)` variants, each `zip_variant(section, i)`):
- every list leaf is one dimension; scalars and mappings of scalars are shared by all variants;
- a list of length 1 broadcasts to every variant;
- all other lists must have the same length N, giving variants 0..N-1; unequal lengths are an error.

Sweep rules (`sweep_count(sweep)` variants, each `sweep_combination(sweep, i)`): the Cartesian product
of the sweep lists, in key order (last key varies fastest), at most SWEEP_LIMIT combinations (counted,
never built, before any is picked: 8 keys of 10 values would be 10^8); every string `"{name}"` is
replaced by the value (keeping its type when the whole string is the placeholder), and `"...{name}..."`
by its text.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterator

from .load import KeyPath

RawYaml = Any
Origins = dict[KeyPath, tuple[str, int]]


def deep_merge(base: RawYaml, over: RawYaml, keep_nulls: bool = False) -> RawYaml:
    """The merge of `over` onto `base`. The result shares untouched subtrees with its inputs, so
    recipe trees are treated as immutable everywhere (nothing in cookbookgen mutates them)."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over if keep_nulls else _without_nulls(over)
    out = dict(base)
    for key, value in over.items():
        if value is None and not keep_nulls:
            out.pop(key, None)
        elif isinstance(value, dict):
            # A mapping merges into an existing mapping; a new one is taken without its nulls.
            out[key] = deep_merge(out[key] if isinstance(out.get(key), dict) else {}, value, keep_nulls)
        else:
            out[key] = value
    return out


def _without_nulls(value: RawYaml) -> RawYaml:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def node_paths(data: RawYaml, prefix: KeyPath = ()) -> list[KeyPath]:
    """Every path under `data` (mapping keys and leaves, not list items), in document order."""
    out: list[KeyPath] = []
    stack: list[tuple[KeyPath, RawYaml]] = [(prefix, data)]
    while stack:                     # depth first, children pushed in reverse: document order
        path, node = stack.pop()
        out.append(path)
        if isinstance(node, dict) and node:
            stack.extend(reversed([(path + (key,), value) for key, value in node.items()]))
    return out


def list_dimensions(data: RawYaml, prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, list[RawYaml]]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from list_dimensions(value, prefix + (key,))
    elif isinstance(data, list):
        yield prefix, data


def zip_length(section: RawYaml) -> tuple[int, list[tuple[KeyPath, int]]]:
    """Number of zip variants and the (path, length) of each list leaf. Raises ValueError on mismatch."""
    dims = [(path, len(values)) for path, values in list_dimensions(section)]
    lengths = {n for _, n in dims if n != 1}
    if len(lengths) > 1:
        listing = ", ".join(f"{'.'.join(map(str, p))}={n}" for p, n in dims if n != 1)
        raise ValueError(f"zip lists have different lengths ({listing}); use equal lengths or length 1")
    if any(n == 0 for _, n in dims):
        raise ValueError("zip lists must not be empty")
    return (lengths.pop() if lengths else 1), dims


def zip_variant(section: RawYaml, index: int) -> RawYaml:
    """Variant `index` of a zip section: each list leaf replaced by its item (length 1 broadcasts)."""
    if isinstance(section, dict):
        return {k: zip_variant(v, index) for k, v in section.items()}
    if isinstance(section, list):
        return section[0] if len(section) == 1 else section[index]
    return section


SWEEP_LIMIT = 10_000


def _sweep_values(sweep: dict[str, RawYaml]) -> list[list[RawYaml]]:
    return [v if isinstance(v, list) else [v] for v in sweep.values()]


def sweep_count(sweep: dict[str, RawYaml]) -> int:
    """The number of combinations of `sweep` (the product of its list lengths), without building one."""
    return math.prod(len(values) for values in _sweep_values(sweep))


def sweep_combination(sweep: dict[str, RawYaml], index: int) -> dict[str, RawYaml]:
    """Combination `index` of `sweep` (0 <= index < sweep_count), the last key varying fastest."""
    values = _sweep_values(sweep)
    picked: list[RawYaml] = []
    for options in reversed(values):
        index, i = divmod(index, len(options))
        picked.append(options[i])
    return dict(zip(sweep, reversed(picked)))


def substitute(data: RawYaml, params: dict[str, RawYaml]) -> RawYaml:
    """Replace `{name}` placeholders of `params` in every string of `data`."""
    if isinstance(data, dict):
        return {k: substitute(v, params) for k, v in data.items()}
    if isinstance(data, list):
        return [substitute(v, params) for v in data]
    if isinstance(data, str) and "{" in data:
        whole = re.fullmatch(r"\{(\w+)\}", data)
        if whole and whole.group(1) in params:
            return params[whole.group(1)]
        return re.sub(r"\{(\w+)\}", lambda m: str(params[m.group(1)]) if m.group(1) in params else m.group(0), data)
    return data


def set_path(data: RawYaml, path: list[str], value: RawYaml) -> RawYaml:
    """A new tree: `data` with `path` set to `value` (intermediate mappings created; what is off the path
    is shared, as recipe trees are never mutated)."""
    if not path:
        return value
    out = dict(data) if isinstance(data, dict) else {}
    out[path[0]] = set_path(out.get(path[0]), path[1:], value)
    return out


def unset_path(data: RawYaml, path: list[str]) -> tuple[RawYaml, bool]:
    """A new tree: `data` without `path` (what is off the path shared); the flag says whether it existed."""
    if not isinstance(data, dict) or path[0] not in data:
        return data, False
    out = dict(data)
    if len(path) == 1:
        del out[path[0]]
        return out, True
    out[path[0]], found = unset_path(out[path[0]], path[1:])
    return out, found
