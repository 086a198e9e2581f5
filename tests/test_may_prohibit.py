"""`policy.classify.may_prohibit`: the cheap search that lets a render without a settings report
(`cookbookgen diff` without a cache) skip classifying. It must say True whenever `classify` could
find a prohibited setting: it answers exactly whether a prohibited rule's path matches some leaf's
path (the rules' `value` aside), on any tree; and a prohibited setting is rendered as the run used it
and flagged the same way by a build and by a diff, with or without a cache (POLICY.md; issue 31)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.policy.classify import classify, leaves, may_prohibit
from cookbookgen.policy.rules import Policy, Rule, glob_matches
from cookbookgen.recipes.bundle import EffectiveRecipe
from cookbookgen.recipes.merge import deep_merge

from conftest import examples

KEYS = st.sampled_from(["env", "args", "X", "Y", "roles", "0", "1"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "v", "0.90"]))
TREES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.dictionaries(KEYS, inner, max_size=4), st.lists(st.dictionaries(KEYS, inner, max_size=3), max_size=3),
                            st.lists(SCALARS, max_size=2)),
    max_leaves=25)
SEGMENTS = st.sampled_from(["**", "*", "env", "X", "roles", "0", "e*", "[XY]", "?"])


def _recipe(data: Any) -> EffectiveRecipe:
    return EffectiveRecipe("r.yaml", None, data, {})


def _policy(pattern: tuple[str, ...]) -> Policy:
    # a published rule first: `may_prohibit` looks at the prohibited rules only
    return Policy((Rule(("args",), "published", "kept"), Rule(pattern, "prohibited", "never")))


@settings(max_examples=examples(400), deadline=None)
@given(data=st.dictionaries(KEYS, TREES, max_size=5), pattern=st.lists(SEGMENTS, min_size=1, max_size=4).map(tuple))
def test_it_says_whether_a_prohibited_rules_path_matches_a_leaf(data: dict[str, Any], pattern: tuple[str, ...]) -> None:
    expected = any(glob_matches(pattern, tuple(map(str, path))) for path, _ in leaves(data))
    assert may_prohibit(_recipe(data), _policy(pattern)) == expected


@settings(max_examples=examples(200), deadline=None)
@given(data=st.dictionaries(KEYS, TREES, max_size=5), pattern=st.lists(SEGMENTS, min_size=1, max_size=4).map(tuple))
def test_it_is_true_whenever_classify_finds_a_prohibited_setting(data: dict[str, Any], pattern: tuple[str, ...]) -> None:
    policy = _policy(pattern)
    if any(s.cls == "prohibited" for s in classify(_recipe(data), Policy(policy.rules))):
        assert may_prohibit(_recipe(data), policy)


@settings(max_examples=examples(300), deadline=None)
@given(base=st.dictionaries(KEYS, TREES, max_size=5), over=st.dictionaries(KEYS, TREES, max_size=4),
       pattern=st.lists(SEGMENTS, min_size=1, max_size=4).map(tuple))
def test_the_trees_a_recipe_was_merged_from_hold_every_path_it_has(base: dict[str, Any], over: dict[str, Any],
                                                                     pattern: tuple[str, ...]) -> None:
    """Searching a variant's base and override finds every prohibited path of their merge (it may
    also find one the override deletes: True only means `classify` must look)."""
    merged = deep_merge(base, over)
    policy = _policy(pattern)
    from_parts = may_prohibit(EffectiveRecipe("r.yaml", "override_x", merged, {}, (base, over)), policy)
    assert from_parts == (may_prohibit(_recipe(base), policy) or may_prohibit(_recipe(over), policy))
    if may_prohibit(_recipe(merged), policy):
        assert from_parts


def test_only_plain_merges_keep_their_parts() -> None:
    """A sweep substitutes values that may be trees and `--set` adds paths: those recipes are searched whole."""
    from cookbookgen.recipes.bundle import apply_overrides, select
    from cookbookgen.recipes.load import parse_yaml

    doc = parse_yaml("base:\n  roles: {agg: {env: {OK: '1'}}}\noverride_a:\n  roles: {agg: {args: {tp: 2}}}\n", "r.yaml")
    variant = select(doc, "override_a")
    assert variant.parts is not None and variant.parts[1] is doc.data["override_a"]
    assert variant.parts[0] == {"roles": {"agg": {"env": {"OK": "1"}}}}
    assert variant.parts[0] is (select(doc, "override_a").parts or ())[0]   # the base: one tree for every variant
    assert apply_overrides(variant, ["roles.agg.env.BAD=1"], []).parts is None
    swept = parse_yaml("roles: {agg: {env: '{e}'}}\nsweep: {e: [{BAD: '1'}]}\n", "s.yaml")
    assert select(swept, "sweep[0]").parts is None
    assert may_prohibit(select(swept, "sweep[0]"), Policy((Rule(("**", "env", "BAD"), "prohibited", "never"),)))


def test_points_sharing_subtrees_are_searched_again_where_they_differ() -> None:
    """The search is remembered per subtree (the same object): a later point whose override adds the
    prohibited setting under a changed mapping is found, with the shared subtrees reused."""
    policy = Policy((Rule(("**", "env", "BAD"), "prohibited", "never"),))
    prefill = {"env": {"OK": "1"}, "args": {"tp": 2}}
    first = {"roles": {"prefill": prefill, "decode": {"env": {"OK": "1"}}}}
    later = {"roles": {"prefill": prefill, "decode": {"env": {"OK": "1", "BAD": "1"}}}}
    assert not may_prohibit(_recipe(first), policy)
    assert may_prohibit(_recipe(later), policy)
    assert not may_prohibit(_recipe(first), policy)
    assert not may_prohibit(_recipe(later), Policy((Rule(("**", "env", "BAD"), "harness-only", "dropped"),)))


@pytest.mark.parametrize("where", ["base", "override"])
@pytest.mark.parametrize("cache", [False, True])
def test_a_prohibited_setting_is_published_flagged_and_a_diff_mismatch(tmp_path, cache: bool, where: str) -> None:
    """Without a cache the diff renders no settings report, yet it reports the prohibited setting as the
    build flags it: published as it ran, disclosed on the cell, a mismatch of class prohibited in the diff."""
    import shutil

    from cookbookgen.cells.assemble import load_cookbook

    from conftest import DATA
    from test_cache import AGG, _diff, _edit

    shutil.copytree(DATA, tmp_path / "data")
    manifest = tmp_path / "data" / "cookbook.yaml"
    if where == "base":
        _edit(manifest.parent / AGG, '        PYTHONUNBUFFERED: "1"\n', '        PYTHONUNBUFFERED: "1"\n        SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE: "1"\n')
    else:       # in one later variant only: its search is the override's, the base's is shared
        _edit(manifest.parent / AGG, '        SGLANG_NUMA_BIND_V2: "0"\n', '        SGLANG_NUMA_BIND_V2: "0"\n        SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE: "1"\n')
    cookbook = load_cookbook(manifest)
    cells = [c for page in cookbook.pages for c in page.cells if "prohibited-setting" in c.disclosures]
    assert cells and all(any(n.startswith("Prohibited setting roles.") and "SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE" in n for n in c.notes)
                         for c in cells)
    assert any(b.env.get("SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE") == "1" for c in cells for p in c.points for b in p.deployment.blocks)
    code, report = _diff(manifest, "text", tmp_path / "cache" if cache else None)
    assert code == 1 and "SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE" in report and "prohibited by the policy" in report
