"""`compare.PointMemo`: sharing findings between the points of a config changes nothing. With one memo
per config, every point gets exactly the findings a fresh comparison gives, and drift put into one
block of a later point (after the memo has seen the same subtrees) is still reported."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.diff.check import resolve_config
from cookbookgen.diff.compare import PointMemo, compare_point
from cookbookgen.diff.expect import PointExpect, point_expect
from cookbookgen.diff.model import Finding, PublishedPoint
from cookbookgen.diff.pairing import Pair, pair_config
from cookbookgen.diff.sources import published_from_cookbook
from cookbookgen.policy.rules import Policy, load_policy
from cookbookgen.recipes.load import YamlFloat
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.model import Block

from conftest import DATA, examples


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import synth

    return synth.generate(tmp_path_factory.mktemp("synth"), 6)


def _pairs(manifest: Path) -> list[list[Pair]]:
    """Per config, its published points paired with their resolved points."""
    published = published_from_cookbook(load_cookbook(manifest), str(manifest), "test")
    ws = Workspace(manifest.parent / "inferencex")
    out = []
    for config in dict.fromkeys(p.config for p in published.points):
        points = [p for p in published.points if p.config == config]
        pairs, _ = pair_config(config, points, resolve_config(ws, config))
        out.append(pairs)
    return out


@pytest.mark.parametrize("which", ["bundled", "synthetic"])
def test_a_shared_memo_gives_every_point_its_fresh_findings(which: str, synthetic: Path) -> None:
    manifest = DATA / "cookbook.yaml" if which == "bundled" else synthetic
    policy = load_policy()
    compared = 0
    for pairs in _pairs(manifest):
        memo = PointMemo()
        for pair in pairs:
            expect = point_expect(pair.resolved, policy)
            shared = compare_point(expect, pair.resolved.recipe, pair.published, policy, memo)
            fresh = compare_point(expect, pair.resolved.recipe, pair.published, policy)
            assert shared == fresh, pair.published.point_id
            assert {f.point for f in shared} == {expect.point}
            compared += 1
    assert compared >= 13


def _edit(point: PublishedPoint, role: str, change) -> PublishedPoint:
    blocks = tuple(change(b) if b.kind == "worker" and b.role == role else b for b in point.blocks)
    return PublishedPoint(point.config, point.cell, point.concs, blocks, point_id=point.point_id, image=point.image)


DRIFTS = {
    "arg value": lambda b: b.model_copy(update={"args": tuple(
        (a[0], "12345") if a[0] == "--synthetic-option-0" else a for a in b.args)}),
    "arg dropped": lambda b: b.model_copy(update={"args": tuple(a for a in b.args if a[0] != "--synthetic-option-1")}),
    "env value": lambda b: b.model_copy(update={"env": {**b.env, "SGLANG_SYNTH_0": "-1"}}),
    "env added": lambda b: b.model_copy(update={"env": {**b.env, "MY_TUNING": "1"}}),
    # what the cookbook adds (`synthesized.yaml`), explained once per name, words and role
    "added arg value": lambda b: b.model_copy(update={"args": tuple(
        (a[0], "org/other-model") if a[0] == "--model-path" else a for a in b.args)}),
    "added arg unexplained": lambda b: b.model_copy(update={"args": (*b.args, ("--my-tuning", "1"))}),
    "arg renamed to one unexplained": lambda b: b.model_copy(update={"args": tuple(      # as many args: the additions change
        ("--my-tuning", *a[1:]) if a[0] == "--synthetic-option-0" else a for a in b.args)}),
    # the point's shape (`structure.check`, shared through `PointMemo.shape`)
    "worker count": lambda b: b.model_copy(update={"workers": (b.workers or 1) + 1}),
    "nodes per worker": lambda b: b.model_copy(update={"nodes_per_worker": (b.nodes_per_worker or 1) + 1}),
    "worker command": lambda b: b.model_copy(update={"cmd": "python3 -m other.server"}),
    "model path dropped": lambda b: b.model_copy(update={"args": tuple(a for a in b.args if a[0] != "--model-path")}),
}


@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_drift_in_a_later_point_is_caught_after_the_memo_saw_the_same_subtrees(drift: str, synthetic: Path) -> None:
    policy = load_policy()
    for pairs in _pairs(synthetic):
        memo = PointMemo()
        for i, pair in enumerate(pairs):
            expect = point_expect(pair.resolved, policy)
            roles = [r for r in ("prefill", "agg") if r in expect.roles]   # prefill: untouched by overrides; agg: touched
            published = _edit(pair.published, roles[0], DRIFTS[drift]) if i == len(pairs) - 1 and roles else pair.published
            found = compare_point(expect, pair.resolved.recipe, published, policy, memo)
            bad = [f for f in found if f.is_mismatch]
            if published is pair.published:
                assert not bad, (pair.published.point_id, bad)
            else:
                assert bad and all(f.point == expect.point and f.role == roles[0] for f in bad), drift
                assert bad == [f for f in compare_point(expect, pair.resolved.recipe, published, policy) if f.is_mismatch]


@pytest.mark.parametrize("which", ["bundled", "synthetic"])
def test_the_shown_as_is_shortcut_makes_the_findings_the_general_path_makes(which: str, synthetic: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`compare._shown_as_is` makes the finding of a role arg or env leaf that a block shows with the
    recipe's words; every point, and every drifted point (where it must step aside), gets the same
    findings with the shortcut turned off."""
    from cookbookgen.diff import compare

    policy = load_policy()
    manifest = DATA / "cookbook.yaml" if which == "bundled" else synthetic
    points = []
    for pairs in _pairs(manifest):
        for pair in pairs:
            points.append((point_expect(pair.resolved, policy), pair.resolved.recipe, pair.published))
            roles = [b.role for b in pair.published.blocks if b.kind == "worker"]
            for drift in ("arg value", "arg dropped", "env value"):
                points.append((points[-1][0], pair.resolved.recipe, _edit(pair.published, str(roles[0]), DRIFTS[drift])))
    shortcut = compare._shown_as_is
    taken = []

    def counted(*args: object) -> object:
        found = shortcut(*args)  # type: ignore[arg-type]
        taken.append(found is not None)
        return found

    monkeypatch.setattr(compare, "_shown_as_is", counted)
    quick = [compare_point(e, r, p, policy) for e, r, p in points]
    monkeypatch.setattr(compare, "_shown_as_is", lambda *args: None)
    general = [compare_point(e, r, p, policy) for e, r, p in points]
    assert quick == general
    assert sum(taken) > len(points) and not all(taken), "the shortcut must be taken, and not always"


def test_the_shortcut_steps_aside_unless_every_block_shows_the_recipes_words() -> None:
    from cookbookgen.diff import compare

    facts = compare.path_facts(("roles", "prefill", "env", "MODE"))
    # a value that happens to spell the kind of leaf ("env") must not count as a block showing it
    assert compare._shown_as_is(None, facts, "env", "r.yaml:3", ("env", "env", "other")) is None  # type: ignore[arg-type]
    assert compare._shown_as_is(None, facts, "x", "r.yaml:3", ("env", "x", compare._ABSENT)) is None  # type: ignore[arg-type]
    arg = compare.path_facts(("roles", "prefill", "args", "tp-size"))
    assert compare._shown_as_is(None, arg, 4, "r.yaml:4", ("arg", (("4",),), (("8",),))) is None  # type: ignore[arg-type]
    assert compare._shown_as_is(None, arg, 4, "r.yaml:4", ("arg", (("4",),), ())) is None  # type: ignore[arg-type]
    assert compare._shown_as_is(None, arg, [4], "r.yaml:4", ("arg", (("4",),))) is None  # type: ignore[arg-type]
    # a float as the YAML spells it: another spelling of the same number is for the general path to judge
    assert compare._shown_as_is(None, arg, YamlFloat(0.9, "0.90"), "r.yaml:4", ("arg", (("0.9",),))) is None  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def synthetic_pairs(synthetic: Path) -> list[list[Pair]]:
    return _pairs(synthetic)[:3]          # one config of each topology


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.lists(st.sampled_from(sorted(DRIFTS)), max_size=2), min_size=10, max_size=10), last_role=st.booleans())
def test_any_drifts_in_any_points_give_the_findings_a_fresh_comparison_gives(synthetic_pairs: list[list[Pair]],
                                                                           plan: list[list[str]], last_role: bool) -> None:
    """Points of a config drifted in any way, in any order, after the memo saw the same subtrees and
    blocks: each gets exactly the findings a comparison with no memo gives."""
    policy = load_policy()
    for pairs in synthetic_pairs:
        memo = PointMemo()
        for pair, drifts in zip(pairs, plan):
            roles = sorted({str(b.role) for b in pair.published.blocks if b.kind == "worker"})
            published = pair.published
            for drift in drifts:
                published = _edit(published, roles[-1 if last_role else 0], DRIFTS[drift])
            expect = point_expect(pair.resolved, policy)
            assert compare_point(expect, pair.resolved.recipe, published, policy, memo) == compare_point(
                expect, pair.resolved.recipe, published, policy), (pair.published.point_id, drifts)


def _walk(manifest: Path) -> Iterator[tuple[bool, Pair, PointExpect, PointMemo, Policy]]:
    """Every point of every config, in order: whether it is its config's last, the pair, its
    expectations, the config's memo and the policy."""
    policy = load_policy()
    for pairs in _pairs(manifest):
        memo = PointMemo()
        for i, pair in enumerate(pairs):
            yield i == len(pairs) - 1, pair, point_expect(pair.resolved, policy), memo, policy


def _one_port(block: Block) -> Block:
    return block.model_copy(update={"args": tuple((a[0], "30000") if a[0] == "--port" else a for a in block.args)})


def test_a_port_two_colocated_workers_share_in_a_later_point_is_caught(synthetic: Path) -> None:
    """The shape check reads each block's `--port` (`structure.block_shape`): co-located prefill
    workers that the last point gives one port are a mismatch, after earlier points shared the shape."""
    caught = 0
    for last, pair, expect, memo, policy in _walk(synthetic):
        clash = last and "prefill" in expect.roles and expect.roles["prefill"].per_node > 1
        published = _edit(pair.published, "prefill", _one_port) if clash else pair.published
        bad = [f for f in compare_point(expect, pair.resolved.recipe, published, policy, memo) if f.is_mismatch]
        assert [(f.role, f.kind, f.item) for f in bad] == ([("prefill", "topology", "ports")] if clash else [])
        caught += clash
    assert caught >= 2


def _with_addition(point: PublishedPoint, target: Block) -> PublishedPoint:
    """`point` with an arg no recipe sets (`--my-tuning 1`) added to its block `target`."""
    blocks = tuple(b.model_copy(update={"args": (*b.args, ("--my-tuning", "1"))}) if b is target else b for b in point.blocks)
    return PublishedPoint(point.config, point.cell, point.concs, blocks, point_id=point.point_id, image=point.image)


def test_an_addition_to_one_of_two_colocated_workers_in_a_later_point_is_caught_once(synthetic: Path) -> None:
    """`PointMemo.label_extras` shares the deduplicated additions of co-located workers only between
    points whose blocks add the very same findings: an arg that one of them adds later is caught, once."""
    caught = 0
    for last, pair, expect, memo, policy in _walk(synthetic):
        published = pair.published
        prefill = [b for b in published.blocks if b.kind == "worker" and b.role == "prefill"]
        if last and len(prefill) > 1:
            published = _with_addition(published, prefill[-1])
        found = compare_point(expect, pair.resolved.recipe, published, policy, memo)
        assert found == compare_point(expect, pair.resolved.recipe, published, policy)
        bad = [(f.role, f.item) for f in found if f.is_mismatch]
        assert bad == ([] if published is pair.published else [("prefill", "--my-tuning")])
        caught += published is not pair.published
    assert caught >= 2


@pytest.mark.parametrize("which", ["bundled", "synthetic"])
def test_an_addition_to_a_frontend_or_service_block_in_a_later_point_is_caught(which: str, synthetic: Path) -> None:
    """`PointMemo.other_extras` shares what a non-worker block adds only between equal blocks."""
    policy = load_policy()
    manifest = DATA / "cookbook.yaml" if which == "bundled" else synthetic
    caught = 0
    for pairs in _pairs(manifest):
        memo = PointMemo()
        for i, pair in enumerate(pairs):
            expect = point_expect(pair.resolved, policy)
            published = pair.published
            others = [b for b in published.blocks if b.kind != "worker"]
            if i == len(pairs) - 1 and others:
                published = _with_addition(published, others[-1])
            found = compare_point(expect, pair.resolved.recipe, published, policy, memo)
            assert found == compare_point(expect, pair.resolved.recipe, published, policy)
            bad = [f for f in found if f.is_mismatch]
            if published is pair.published:
                assert not bad
            else:
                assert [f.item for f in bad] == ["--my-tuning"]
                caught += 1
    assert caught >= 3


@pytest.mark.parametrize("which", ["bundled", "synthetic"])
def test_worker_blocks_shared_between_points_are_the_fresh_ones(which: str, synthetic: Path) -> None:
    """`render.deploy` shares blocks between the points of a config that share their recipe subtrees
    (`RunMemo`): each point's deployment equals one rendered with a fresh memo."""
    from cookbookgen.pipeline import render_all_points, render_point

    manifest = DATA / "cookbook.yaml" if which == "bundled" else synthetic
    ws = Workspace(manifest.parent / "inferencex")
    policy = load_policy()
    for key in ws.entries():
        for rp in render_all_points(ws, policy, key):
            assert rp.deployment == render_point(rp.point, policy), rp.point.point_id


def test_a_check_that_reads_the_blocks_args_is_recorded_so_its_verdict_is_not_shared() -> None:
    """`PointMemo.explained` shares a verdict only when the check read nothing of the block but its
    role: the router checks count the block's `--prefill` entries, and the scope records that."""
    from cookbookgen.diff.explain import Scope, explain
    from cookbookgen.render.model import Block

    policy = load_policy()
    pairs = _pairs(DATA / "cookbook.yaml")[0]
    expect = point_expect(pairs[0].resolved, policy)
    router = Block(kind="sglang-router", title="router", cmd="python -m sglang_router.launch_router",
                   args=(("--prefill", "http://p0:30000", "8998"),))
    scope = Scope(expect, router)
    explain("args", "sglang-router", "--prefill", ("http://p0:30000", "8998"), scope)
    assert scope.read_args == ["--prefill"]
    worker = Block(kind="worker", role="decode", title="decode", cmd="python3 -m sglang.launch_server", args=(("--host", "0.0.0.0"),))
    quiet = Scope(expect, worker)
    explain("args", "worker", "--host", ("0.0.0.0",), quiet)
    assert quiet.read_args == []


def test_additions_whose_explanation_read_another_arg_are_explained_again(synthetic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An explanation of a block's addition that reads the block's other args is not shared with the
    next point: it says what that point's block holds (here, an explanation that quotes
    `--synthetic-option-0`), as a fresh comparison does."""
    from cookbookgen.diff import compare

    explain = compare._explain_addition

    def reading(ctx, block, section, name, words, scope):  # type: ignore[no-untyped-def]
        found = explain(ctx, block, section, name, words, scope)
        if block.kind != "worker":
            return found
        quoted = scope.args_named("--synthetic-option-0")
        return Finding(found.config, found.point, found.role, found.kind, found.item, found.cls, detail=f"{found.detail} {quoted}",
                       cookbook=found.cookbook, reason=found.reason, rule=found.rule, path=found.path)

    monkeypatch.setattr(compare, "_explain_addition", reading)
    checked = 0
    for last, pair, expect, memo, policy in _walk(synthetic):
        published = pair.published
        if last:
            published = _edit(published, next(b.role for b in published.blocks if b.kind == "worker"), DRIFTS["arg value"])
        shared = compare_point(expect, pair.resolved.recipe, published, policy, memo)
        assert shared == compare_point(expect, pair.resolved.recipe, published, policy), pair.published.point_id
        checked += last and any("12345" in f.detail for f in shared)
    assert checked >= 2
