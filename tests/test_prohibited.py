"""Prohibited settings and the policy's rule order: `classify` (with the memo the points of a config
share) finds every prohibited setting, and a prohibited setting stops the diff with the message a
build gives; the first rule whose pattern and value match is the one a setting gets."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.errors import CookbookError
from cookbookgen.policy.classify import SettingsMemo, classify
from cookbookgen.policy.rules import Policy, Rule, Setting, glob_matches
from cookbookgen.recipes.bundle import EffectiveRecipe
from cookbookgen.recipes.merge import deep_merge

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
    return Policy((Rule(("args",), "published", "kept"), Rule(pattern, "prohibited", "never")))


def _classified(data: Any, policy: Policy, memo: SettingsMemo | None = None) -> list[Setting] | str:
    try:
        return classify(_recipe(data), policy, memo)
    except CookbookError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(base=st.dictionaries(KEYS, TREES, max_size=5), overs=st.lists(st.dictionaries(KEYS, TREES, max_size=4), min_size=1, max_size=4),
       pattern=st.lists(SEGMENTS, min_size=1, max_size=4).map(tuple))
def test_points_that_share_subtrees_classify_with_a_shared_memo_as_alone(base: dict[str, Any], overs: list[dict[str, Any]],
                                                                        pattern: tuple[str, ...]) -> None:
    """The variants of a bundle share the subtrees their overrides leave alone (`deep_merge`): with one
    memo for them all, each gets the settings (or the prohibited-setting error) it gets alone."""
    policy, memo = _policy(pattern), {}
    for over in overs:
        merged = deep_merge(base, over)
        assert _classified(merged, policy, memo) == _classified(merged, policy)


def test_a_prohibited_setting_in_a_later_point_is_found_after_the_memo_saw_the_shared_subtrees() -> None:
    policy = Policy((Rule(("**", "env", "BAD"), "prohibited", "never"),))
    prefill = {"env": {"OK": "1"}, "args": {"tp": 2}}
    first = {"roles": {"prefill": prefill, "decode": {"env": {"OK": "1"}}}}
    later = {"roles": {"prefill": prefill, "decode": {"env": {"OK": "1", "BAD": "1"}}}}
    memo: SettingsMemo = {}
    assert isinstance(_classified(first, policy, memo), list)
    assert "prohibited setting" in str(_classified(later, policy, memo))


@pytest.mark.parametrize("where", ["base", "override"])
@pytest.mark.parametrize("cache", [False, True])
def test_a_prohibited_setting_stops_the_diff_with_the_builds_message(tmp_path, cache: bool, where: str) -> None:
    """Without a cache the diff renders no settings report, yet a prohibited setting is the same error."""
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
    with pytest.raises(CookbookError) as built:
        load_cookbook(manifest)
    with pytest.raises(CookbookError) as diffed:
        _diff(manifest, "text", tmp_path / "cache" if cache else None)
    assert "prohibited setting" in str(built.value) and str(diffed.value) == str(built.value)


# --- the rule a setting's path and value find first ------------------------------------------------

_VALUES = st.sampled_from([None, True, 1, "1", "v", 0.9])


@settings(max_examples=400, deadline=None)
@given(rules=st.lists(st.tuples(st.lists(SEGMENTS, min_size=1, max_size=4).map(tuple), st.booleans(), _VALUES), min_size=1, max_size=8),
       path=st.lists(KEYS, min_size=1, max_size=5).map(tuple), value=_VALUES)
def test_the_first_rule_is_the_first_whose_pattern_and_value_match(rules: list[tuple[tuple[str, ...], bool, Any]],
                                                                   path: tuple[str, ...], value: Any) -> None:
    """`Policy.first_match` (which globs only the rules whose plain keys are all in the path, and keeps
    what it found per path) names the first rule, in order, whose pattern matches the path or one of
    its prefixes and whose `value`, when it has one, is the setting's (equal and of the same type)."""
    policy = Policy(tuple(Rule(pattern, "harness-only", f"rule {i}", *((v,) if conditional else ()))
                          for i, (pattern, conditional, v) in enumerate(rules)))
    expected = next((r for r, (_, conditional, v) in zip(policy.rules, rules)
                     if glob_matches(r.pattern, path) and (not conditional or (type(v) is type(value) and v == value))), None)
    assert policy.first_match(path, value) is expected
    assert policy.first_match(path, value) is expected          # again, from what it keeps per path


def _globbed(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """What `glob_matches` means, part by part with `fnmatchcase`: the pattern matches the path or a
    prefix of it, `**` standing for any number of keys."""
    from fnmatch import fnmatchcase

    if not pattern:
        return True
    if pattern[0] == "**":
        return any(_globbed(pattern[1:], path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatchcase(path[0], pattern[0]) and _globbed(pattern[1:], path[1:])


@settings(max_examples=1000, deadline=None)
@given(pattern=st.lists(st.sampled_from(["**", "*", "env", "X", "roles", "0", "e*", "[XY]", "?", "en?", "a.b", "(x)"]), max_size=5).map(tuple),
       path=st.lists(st.sampled_from(["env", "envs", "args", "X", "Y", "roles", "0", "01", "1", "a.b", "(x)", "ex"]), max_size=6).map(tuple))
def test_a_pattern_matches_as_globbing_it_part_by_part_does(pattern: tuple[str, ...], path: tuple[str, ...]) -> None:
    assert glob_matches(pattern, path) is _globbed(pattern, path)
