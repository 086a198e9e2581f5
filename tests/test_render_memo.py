"""The points of a config share a run memo (`render.deploy.RunMemo`): whatever the overrides change,
every point renders exactly as it does with a fresh memo."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.bundle import select
from cookbookgen.recipes.load import parse_yaml
from cookbookgen.recipes.schema import normalise
from cookbookgen.render.deploy import RenderContext, RunMemo, render
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
    out = []
    for i in range(len(overrides)):
        normal, typed = normalise(select(doc, f"override_p{i}"))
        out.append((normal, typed))
    return out


POLICY = load_policy()


def _render(recipe: Any, typed: Any, memo: RunMemo) -> Deployment:
    return render(recipe, typed, RenderContext("org/Model-1", POLICY, settings=False, memo=memo))


@settings(max_examples=examples(120), deadline=None)
@given(ARGS, OVERRIDES, st.one_of(st.none(), st.integers(0, 4)))
def test_each_point_renders_as_with_a_fresh_memo(base_args: dict[str, Any], overrides: list[dict[str, Any]],
                                                  env_change: int | None) -> None:
    shared = RunMemo()
    for recipe, typed in _points(base_args, overrides, env_change):
        assert _render(recipe, typed, shared) == _render(recipe, typed, RunMemo())


def test_a_sweep_of_a_few_arg_values_renders_as_with_a_fresh_memo() -> None:
    """The synthetic shape of a sweep (a few arg values per point), then an arg the others lack."""
    base = {"tensor-parallel-size": 8, "mem-fraction-static": 0.8, "chunked-prefill-size": 8192, "enable-metrics": True}
    sweep = [{"chunked-prefill-size": n} for n in (1024, 2048, 4096)] + [{"disable-radix-cache": True}]
    shared = RunMemo()
    for recipe, typed in _points(base, sweep):
        assert _render(recipe, typed, shared) == _render(recipe, typed, RunMemo())


def test_a_point_whose_env_has_the_same_names_in_another_order_is_made_whole() -> None:
    """Two points whose role env has the same names, in another order, with the values swapped: the
    values compared place by place are the very same objects (one-character texts are shared), yet
    the env differs."""
    bundle: dict[str, Any] = {"base": minimal_recipe(), "override_a": {"roles": {"agg": {"env": {"A": "1", "B": "2"}}}},
                              "override_b": {"roles": {"agg": {"env": {"B": "1", "A": "2"}}}}}
    doc = parse_yaml(dump(bundle), "bundle.yaml")
    shared = RunMemo()
    for selector in ("override_a", "override_b"):
        recipe, typed = normalise(select(doc, selector))
        assert _render(recipe, typed, shared) == _render(recipe, typed, RunMemo())


def test_a_point_whose_kv_events_settings_are_equal_but_not_the_same_is_made_whole() -> None:
    """`1` and `true` are equal in Python, not in the `--kv-events-config` JSON they become."""
    bundle: dict[str, Any] = {"base": minimal_recipe(), "override_a": {"roles": {"agg": {"kv_events": {"buffer": 1}}}},
                              "override_b": {"roles": {"agg": {"kv_events": {"buffer": True}}}}}
    doc = parse_yaml(dump(bundle), "bundle.yaml")
    shared, shown = RunMemo(), []
    for selector in ("override_a", "override_b"):
        recipe, typed = normalise(select(doc, selector))
        deployment = _render(recipe, typed, shared)
        assert deployment == _render(recipe, typed, RunMemo())
        shown += [a for b in deployment.blocks for a in b.args if a[0] == "--kv-events-config"]
    assert '"buffer":1' in shown[0][1] and '"buffer":true' in shown[1][1]
