"""The current InferenceX layout (issue 31; tests/data/corpus/inferencex-e2e-slice/, sources in its SOURCES.md):
single-node rows naming `srt-recipe:` with no selector use the variant that agrees with the row (TP, EP,
DP attention, KV mode) and the point; the harness's `@fabric.*` values become shell placeholders; a
framework whose rows all name recipes is read through them; the derived SGLang-router variant of a
disaggregated cell pairs each prefill URL with the bootstrap port the worker sets."""

from __future__ import annotations

import json

import pytest

from cookbookgen.cli import main
from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.master import check_framework
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RunMemo
from cookbookgen.render.model import Block

from conftest import CORPUS

SLICE = CORPUS / "inferencex-e2e-slice"


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace(SLICE)


def _selectors(ws: Workspace, key: str) -> dict[str, str | None]:
    entry = ws.entry(key)
    return {f"{row.slug}/c{c}": ws.selector(entry, row, c) for row in entry.rows for c in row.concs}


def test_zip_variants_are_picked_by_tp_and_concurrency(ws: Workspace) -> None:
    assert _selectors(ws, "dsr1-fp4-mi355x-sglang") == {
        **{f"tp4/c{c}": f"zip_override_tp4_ep1[{i}]" for i, c in enumerate((4, 8, 16, 32, 64))},
        **{f"tp8/c{c}": f"zip_override_tp8_ep1[{i}]" for i, c in enumerate((4, 8, 16, 32, 64))}}


def test_the_kv_mode_and_ep_pick_between_variants_without_a_concurrency(ws: Workspace) -> None:
    """override_gpu_kv / override_hicache / override_hicache_ep1: the row's kv-offloading and ep decide."""
    assert set(_selectors(ws, "qwen3.5-fp8-h200-sglang-agentic-hicache-mtp").values()) == {"override_hicache_ep1"}
    ep8 = ws.entry("qwen3.5-fp8-h200-sglang-agentic-mtp")     # EP8 rows: one without host KV cache, one with it
    assert [ws.selector(ep8, row, row.concs[0]) for row in ep8.rows] == ["override_gpu_kv", "override_hicache"]


def test_dp_attention_picks_the_dp_variant(ws: Workspace) -> None:
    assert _selectors(ws, "dsv41flash-fp4-h100-sglang-agentic-dspark-dpa") == {f"dep8/c{c}": f"override_dp8_c{c}" for c in (4, 8, 16, 20)}
    assert all(s is not None and s.startswith("override_tp") for s in _selectors(ws, "dsv41flash-fp4-h100-sglang-agentic-dspark").values())


def test_every_point_renders_and_the_harness_values_are_placeholders(ws: Workspace) -> None:
    policy = load_policy(None)
    rendered = {}
    for key in ("dsr1-fp4-mi355x-sglang", "qwen3.5-fp8-h200-sglang-agentic-hicache-mtp", "qwen3.5-fp8-h200-sglang-agentic-mtp",
                "dsv41flash-fp4-h100-sglang-agentic-dspark", "dsv41flash-fp4-h100-sglang-agentic-dspark-dpa", "qwen3.5-fp4-mi355x-sglang-disagg"):
        entry = ws.entry(key)
        check_framework(entry)       # sglang-disagg: its rows name recipes, so the recipes decide
        memo = RunMemo()
        rendered[key] = [render_point(ws.point(entry, row, c), policy, False, memo) for row in entry.rows for c in row.concs]
    assert sum(map(len, rendered.values())) == 43
    disagg = json.dumps([b.model_dump() for d in rendered["qwen3.5-fp4-mi355x-sglang-disagg"] for b in d.blocks])
    assert "@fabric" not in disagg and '"GLOO_SOCKET_IFNAME": "$FABRIC_SOCKET_IFNAME"' in disagg
    hicache = rendered["qwen3.5-fp8-h200-sglang-agentic-hicache-mtp"][0]
    assert ("--hicache-size", "77") in next(b for b in hicache.blocks if b.kind == "worker").args


def test_a_recipe_the_schema_refuses_is_one_located_reason(ws: Workspace) -> None:
    entry = ws.entry("dsr1-fp4-b200-trt")
    row = entry.rows[0]
    with pytest.raises(CookbookError) as exc:
        ws.point(entry, row, row.concs[0])
    problem = exc.value.problems[0]
    assert problem.file.endswith("dsr1/trtllm/b200-fp4/8k1k.yaml") and problem.line > 0 and problem.key_path == "frontend.type"


def test_list_of_the_slice_is_complete(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--source", str(SLICE), "--format", "json"]) == 0
    configs = json.loads(capsys.readouterr().out)["configs"]
    assert len(configs) == 7 and all(c["problem"] is None for c in configs)
    assert all(p["problem"] is None for c in configs for p in c["points"])


def test_the_derived_sglang_router_uses_the_bootstrap_port_the_prefill_worker_sets() -> None:
    """A recipe setting disaggregation-bootstrap-port made the derived router variant fail its own check
    ("the router's bootstrap port 8998 ... differs from the worker's 31000")."""
    from cookbookgen.cells.variants import check_consistency, to_sglang
    from cookbookgen.render.model import Deployment

    def worker(role: str, port: str, extra: tuple[tuple[str, ...], ...]) -> Block:
        return Block(kind="worker", role=role, title=role, cmd="python3 -m dynamo.sglang", workers=1, nodes_per_worker=1,
                     args=(("--model-path", "org/m"), ("--port", port), ("--disaggregation-mode", role), *extra))
    blocks = [worker("prefill", "30000", (("--disaggregation-bootstrap-port", "31000"),)), worker("decode", "30000", ())]
    derived = to_sglang(blocks, "org/m")
    router = next(b for b in derived if b.kind == "sglang-router")
    assert [a for a in router.args if a[0] == "--prefill"] == [("--prefill", "http://$PREFILL_0_HEAD_IP:30000", "31000")]
    assert check_consistency(Deployment(blocks=tuple(derived), model="org/m")) == []


def test_unset_takes_the_path_errors_name(capsys: pytest.CaptureFixture[str]) -> None:
    """Errors and the settings report name a v1 recipe's settings by their schema-2 path
    (roles.agg.env.X, not backend.aggregated_environment.X); --unset takes that path as well as the written one."""
    recipe = str(CORPUS / "srt-slurm/srt-slurm-recipes/recipes/single-node/Qwen3.5/H200/sglang/1k1k-mtp.yaml") + ":sweep[0]"

    def worker_env(*unset: str) -> dict[str, str]:
        argv = ["render", "--recipe", recipe, "--format", "json"] + [w for u in unset for w in ("--unset", u)]
        assert main(argv) == 0
        return next(b["env"] for b in json.loads(capsys.readouterr().out)["blocks"] if b["kind"] == "worker")

    assert worker_env()["DYN_HEALTH_CHECK_ENABLED"] == "false"
    assert "DYN_HEALTH_CHECK_ENABLED" not in worker_env("roles.agg.env.DYN_HEALTH_CHECK_ENABLED")
    assert "DYN_HEALTH_CHECK_ENABLED" not in worker_env("backend.aggregated_environment.DYN_HEALTH_CHECK_ENABLED")
    assert main(["render", "--recipe", recipe, "--unset", "roles.agg.env.NOPE"]) == 2
    assert "'roles.agg.env.NOPE': no such setting in the effective recipe" in capsys.readouterr().err
