"""Properties of the recipe-tree operations: deep merge laws, zip broadcasting, sweeps, set/unset."""

from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cookbookgen.recipes.merge import (
    deep_merge,
    set_path,
    substitute,
    sweep_combination,
    sweep_count,
    unset_path,
    zip_length,
    zip_variant,
)

keys = st.sampled_from(["a", "b", "c", "args", "env", "x-y"])
scalars = st.one_of(st.integers(-5, 5), st.text(max_size=4), st.booleans(), st.floats(allow_nan=False, width=32))
trees = st.recursive(scalars | st.lists(scalars, max_size=3),
                     lambda inner: st.dictionaries(keys, inner | st.none(), max_size=4), max_leaves=12)
mappings = st.dictionaries(keys, trees | st.none(), max_size=4)


def _no_nulls(tree):
    if isinstance(tree, dict):
        return {k: _no_nulls(v) for k, v in tree.items() if v is not None}
    return tree


@given(mappings)
def test_merging_empty_is_identity(base) -> None:
    clean = _no_nulls(base)
    assert deep_merge(clean, {}) == clean
    assert deep_merge({}, clean) == clean


def _shapes_agree(x, y) -> bool:
    """No key is a mapping in one tree and a scalar or list in the other."""
    for key in set(x) & set(y):
        if isinstance(x[key], dict) != isinstance(y[key], dict):
            return False
        if isinstance(x[key], dict) and not _shapes_agree(x[key], y[key]):
            return False
    return True


@given(mappings, mappings, mappings)
def test_merge_is_associative_when_shapes_agree(a, b, c) -> None:
    a, b, c = _no_nulls(a), _no_nulls(b), _no_nulls(c)
    assume(_shapes_agree(a, b) and _shapes_agree(b, c) and _shapes_agree(a, c))
    assert deep_merge(deep_merge(a, b), c) == deep_merge(a, deep_merge(b, c))


def test_merge_is_not_associative_when_a_scalar_replaces_a_mapping() -> None:
    """Why the law above needs agreeing shapes: a scalar in the middle layer erases the mapping."""
    a, b, c = {"c": {"a": 0}}, {"c": 0}, {"c": {}}
    assert deep_merge(deep_merge(a, b), c) == {"c": {}}
    assert deep_merge(a, deep_merge(b, c)) == {"c": {"a": 0}}


@given(mappings, mappings)
def test_merge_is_idempotent_on_the_override(a, b) -> None:
    once = deep_merge(a, b)
    assert deep_merge(once, b) == once


@given(mappings, mappings)
def test_merge_does_not_mutate_inputs(a, b) -> None:
    a0, b0 = copy.deepcopy(a), copy.deepcopy(b)
    deep_merge(a, b)
    assert (a, b) == (a0, b0)


@given(mappings, keys)
def test_null_deletes_and_scalars_replace(a, key) -> None:
    assert key not in deep_merge(a, {key: None})
    assert deep_merge(a, {key: 7})[key] == 7


def test_lists_replace_and_mappings_merge() -> None:
    base = {"args": {"a": 1, "b": [1, 2]}, "env": {"X": "1"}}
    over = {"args": {"b": [3], "c": True}, "env": None}
    assert deep_merge(base, over) == {"args": {"a": 1, "b": [3], "c": True}}


@given(st.integers(1, 6), st.data())
def test_zip_broadcasts_length_one_and_scalars(n, data) -> None:
    long = data.draw(st.lists(st.integers(), min_size=n, max_size=n))
    one = data.draw(st.integers())
    section = {"a": long, "b": [one], "c": {"d": "shared", "e": list(long)}}
    count, _ = zip_length(section)
    assert count == n
    for i in range(n):
        assert zip_variant(section, i) == {"a": long[i], "b": one, "c": {"d": "shared", "e": long[i]}}


@given(st.integers(2, 5), st.integers(2, 5))
def test_zip_rejects_unequal_lengths(n, m) -> None:
    if n == m:
        return
    with pytest.raises(ValueError, match="different lengths"):
        zip_length({"a": list(range(n)), "b": {"c": list(range(m))}})


@given(st.dictionaries(st.sampled_from(["conc", "tp", "ep"]), st.lists(st.integers(1, 64), min_size=1, max_size=3), min_size=1))
def test_sweep_is_the_cartesian_product(sweep) -> None:
    """Picked one by one, the combinations are itertools.product's, in its order (last key fastest)."""
    combos = [sweep_combination(sweep, i) for i in range(sweep_count(sweep))]
    assert combos == [dict(zip(sweep, combo)) for combo in itertools.product(*sweep.values())]
    for combo in combos:
        assert substitute({"x": "{" + next(iter(sweep)) + "}"}, combo)["x"] == combo[next(iter(sweep))]


def test_substitute_keeps_types_of_whole_placeholders() -> None:
    assert substitute({"a": "{tp}", "b": "tp={tp}", "c": ["{conc}"], "d": "{other}"}, {"tp": 8, "conc": 4}) == \
        {"a": 8, "b": "tp=8", "c": [4], "d": "{other}"}


@given(mappings, st.lists(keys, min_size=1, max_size=3), scalars)
def test_set_then_unset_round_trips(tree, path, value) -> None:
    updated = set_path(tree, path, value)
    node = updated
    for key in path:
        node = node[key]
    assert node == value
    removed, found = unset_path(updated, path)
    assert found
    node = removed
    for key in path[:-1]:
        node = node[key]
    assert path[-1] not in node
