"""`render.deploy` makes a worker block from the one its role had at the last point when only a few
arg values changed (`_worker_from_last`). Whatever the overrides change, every point renders exactly
as it does with a fresh policy (no memo); and the shortcut is in fact taken."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.bundle import select
from cookbookgen.recipes.load import parse_yaml
from cookbookgen.recipes.schema import normalise
from cookbookgen.render import deploy
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.model import Deployment

from recipes_factory import dump, minimal_recipe

from conftest import examples

# Args the policy treats differently: published, harness-only, placeholder with and without a
# replacement, `port` (the block has a `--port` of its own), a switch whose `false` is dropped, and
# `request-plane`, a flag the block also has from the recipe's `dynamo.request_plane`.
NAMES = ("tensor-parallel-size", "mem-fraction-static", "enable-metrics", "port", "disaggregation-ib-device",
         "chunked-prefill-size", "json-model-override-args", "cuda-graph-bs", "disable-radix-cache", "request-plane")

VALUES = st.one_of(
    st.integers(0, 5000), st.booleans(), st.none(), st.sampled_from(["0.8", "mlx5_0", "a b", "$X", "1e3"]),
    st.lists(st.integers(1, 512), min_size=1, max_size=3), st.sampled_from([0.85, 1.5]),
)
TP = st.sampled_from([1, 2, 4, 8])      # the schema checks it
ARGS = st.fixed_dictionaries({name: TP if name == "tensor-parallel-size" else VALUES for name in NAMES})
OVERRIDES = st.lists(st.dictionaries(st.sampled_from(NAMES[1:]), VALUES, max_size=3), min_size=1, max_size=5)


def _points(base_args: dict[str, Any], overrides: list[dict[str, Any]], env_change: int | None = None) -> list[tuple[Any, Any]]:
    """The effective recipe and typed view of each override of a bundle whose base has `base_args`."""
    bundle: dict[str, Any] = {"base": minimal_recipe(roles={"agg": {"args": base_args}}, dynamo={"request_plane": "tcp"})}
    for i, over in enumerate(overrides):
        section: dict[str, Any] = {"roles": {"agg": {"args": over}}} if over else {"benchmark": {"env": {"CONC": str(i)}}}
        if env_change == i:
            section.setdefault("roles", {}).setdefault("agg", {})["env"] = {"SGLANG_X": "2"}
        bundle[f"override_p{i}"] = section
    doc = parse_yaml(dump(bundle), "bundle.yaml")
    out, sibling = [], None
    for i in range(len(overrides)):
        normal, typed = sibling = normalise(select(doc, f"override_p{i}"), sibling)
        out.append((normal, typed))
    return out


def _render(recipe: Any, typed: Any, policy: Any) -> Deployment:
    return render(recipe, typed, RenderContext("org/Model-1", policy, settings=False))


@settings(max_examples=examples(120), deadline=None)
@given(ARGS, OVERRIDES, st.one_of(st.none(), st.integers(0, 4)))
def test_each_point_renders_as_with_a_fresh_policy(base_args: dict[str, Any], overrides: list[dict[str, Any]],
                                                  env_change: int | None) -> None:
    shared = load_policy()
    for recipe, typed in _points(base_args, overrides, env_change):
        assert _render(recipe, typed, shared) == _render(recipe, typed, load_policy())


def test_a_later_point_takes_its_worker_block_from_the_last_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The synthetic shape of a sweep (a few arg values per point) goes through the shortcut, and the
    blocks it makes equal whole ones; a change to a published arg's flag set does not."""
    made: list[bool] = []
    real = deploy._worker_from_last

    def counting(*args: Any) -> Any:
        block = real(*args)
        made.append(block is not None)
        return block
    monkeypatch.setattr(deploy, "_worker_from_last", counting)
    base = {"tensor-parallel-size": 8, "mem-fraction-static": 0.8, "chunked-prefill-size": 8192, "enable-metrics": True}
    sweep = [{"chunked-prefill-size": n} for n in (1024, 2048, 4096)] + [{"disable-radix-cache": True}]
    shared = load_policy()
    for recipe, typed in _points(base, sweep):
        assert _render(recipe, typed, shared) == _render(recipe, typed, load_policy())
    # the second and third points come from the one before; the fourth adds an arg (other names): made whole
    assert made == [True, True, False]


def test_a_point_whose_env_has_the_same_names_in_another_order_is_made_whole() -> None:
    """Two points whose role env has the same names, in another order, with the values swapped: the
    values compared place by place are the very same objects (one-character texts are shared), yet
    the env differs."""
    bundle: dict[str, Any] = {"base": minimal_recipe(), "override_a": {"roles": {"agg": {"env": {"A": "1", "B": "2"}}}},
                              "override_b": {"roles": {"agg": {"env": {"B": "1", "A": "2"}}}}}
    doc = parse_yaml(dump(bundle), "bundle.yaml")
    shared, sibling = load_policy(), None
    for selector in ("override_a", "override_b"):
        recipe, typed = sibling = normalise(select(doc, selector), sibling)
        assert _render(recipe, typed, shared) == _render(recipe, typed, load_policy())


def test_a_point_whose_kv_events_settings_are_equal_but_not_the_same_is_made_whole() -> None:
    """`1` and `true` are equal in Python, not in the `--kv-events-config` JSON they become."""
    bundle: dict[str, Any] = {"base": minimal_recipe(), "override_a": {"roles": {"agg": {"kv_events": {"buffer": 1}}}},
                              "override_b": {"roles": {"agg": {"kv_events": {"buffer": True}}}}}
    doc = parse_yaml(dump(bundle), "bundle.yaml")
    shared, sibling, shown = load_policy(), None, []
    for selector in ("override_a", "override_b"):
        recipe, typed = sibling = normalise(select(doc, selector), sibling)
        deployment = _render(recipe, typed, shared)
        assert deployment == _render(recipe, typed, load_policy())
        shown += [a for b in deployment.blocks for a in b.args if a[0] == "--kv-events-config"]
    assert '"buffer":1' in shown[0][1] and '"buffer":true' in shown[1][1]
