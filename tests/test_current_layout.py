"""The current InferenceX layout (issue 31; tests/data/corpus/inferencex-e2e-slice/, sources in its SOURCES.md):
single-node rows naming `srt-recipe:` with no selector use the variant that agrees with the row (TP, EP,
DP attention, KV mode) and the point; the harness's `@fabric.*` values become shell placeholders; a
framework whose rows all name recipes is read through them; the derived SGLang-router variant of a
disaggregated cell pairs each prefill URL with the bootstrap port the worker sets."""

from __future__ import annotations

import json

import pytest
import yaml

from cookbookgen.cli import main
from cookbookgen.pipeline import render_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.master import check_framework
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RunMemo
from cookbookgen.render.model import Block
from cookbookgen.render.shell import format_block

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


SERVE = ("SemiAnalysisAI/srt-slurm@05a3cec4 src/srtctl/backends/trtllm.py TRTLLMProtocol.build_worker_command, its direct "
         "(trtllm_serve) launch: the model, host, the public port, the three parallel sizes the options set, --config, extra_args")


def test_trtllm_serve_is_the_one_aggregated_worker_as_srtctl_launches_it(ws: Workspace) -> None:
    """`frontend.type: trtllm_serve` (every `trt` config of the current layout) was refused as an unknown
    frontend type. Golden: the whole command, derived by hand from srtctl 2.x (SERVE); the options file
    is the role's merged args (base + zip_override_tp4_ep1, item 0), as srtctl's yaml.safe_dump writes it."""
    entry = ws.entry("dsr1-fp4-b200-trt")
    row = entry.rows[0]
    deployment = render_point(ws.point(entry, row, 4), load_policy(None), False, RunMemo())
    (worker,) = deployment.blocks
    assert format_block(worker, with_files=False) == (
        "trtllm-llmapi-launch trtllm-serve nvidia/DeepSeek-R1-0528-FP4-V2 \\\n  --host 0.0.0.0 \\\n  --port 8000 \\\n"
        "  --tensor_parallel_size 4 \\\n  --moe_expert_parallel_size 1 \\\n  --pipeline_parallel_size 1 \\\n"
        "  --config trtllm_config_agg.yaml"), SERVE
    options = yaml.safe_load(worker.files["trtllm_config_agg.yaml"])
    recipe = yaml.safe_load((SLICE / "inferencex-e2e/benchmarks/single_node/srt-slurm-recipes/dsr1/trtllm/b200-fp4/8k1k.yaml").read_text())
    expected = {**recipe["base"]["roles"]["agg"]["args"], **recipe["zip_override_tp4_ep1"]["roles"]["agg"]["args"]}
    expected["cuda_graph_config"] = {"enable_padding": True, "max_batch_size": 4}
    assert options == expected
    assert deployment.gpus == 4 and deployment.nodes == 1


def test_extra_args_follow_the_config_flag_and_are_refused_where_srtctl_ignores_them(tmp_path, capsys) -> None:
    """`roles.agg.extra_args` (a trtllm-serve server flag no options key can set) come last, verbatim; with a
    Dynamo frontend srtctl would not pass them, so the recipe is refused at their line, not rendered without them."""
    path = SLICE / "inferencex-e2e/benchmarks/single_node/srt-slurm-recipes/minimaxm3/trtllm/b200-fp4-mtp/agentic.yaml"
    assert main(["render", "--recipe", f"{path}:override_tp8_c1", "--format", "json"]) == 0
    worker = json.loads(capsys.readouterr().out)["blocks"][-1]
    assert worker["args"][-2:] == [["--config", "trtllm_config_agg.yaml"], ["--chat_template", "/model/chat_template.jinja"]], SERVE
    text = path.read_text()
    dynamo = tmp_path / "dynamo.yaml"
    dynamo.write_text(text.replace("type: trtllm_serve", "type: dynamo", 1))
    assert main(["render", "--recipe", f"{dynamo}:override_tp8_c1"]) == 2
    line = text.splitlines().index("      extra_args: [--chat_template, /model/chat_template.jinja]") + 1
    assert capsys.readouterr().err.startswith(f"cookbookgen: error: {dynamo}:{line}: roles.agg.extra_args: srtctl passes extra_args "
                                              "to trtllm-serve only")


def test_trtllm_serve_with_prefill_and_decode_is_refused_at_the_frontend_type(tmp_path, capsys) -> None:
    """Disaggregated trtllm_serve runs srtctl's orchestrator from a ser.yaml it writes: not rendered yet, so refused."""
    recipe = tmp_path / "disagg.yaml"
    recipe.write_text("schema: 2\nname: d\nmodel: {path: \"hf:org/m\"}\nresources: {gpu_type: b200, gpus_per_node: 8}\n"
                      "frontend:\n  type: trtllm_serve\n"
                      "engine: trtllm\nroles:\n  prefill: {nodes: 1, workers: 1, gpus: 8, args: {tensor_parallel_size: 8}}\n"
                      "  decode: {nodes: 1, workers: 1, gpus: 8, args: {tensor_parallel_size: 8}}\n")
    assert main(["render", "--recipe", str(recipe)]) == 2
    assert capsys.readouterr().err.startswith(f"cookbookgen: error: {recipe}:6: frontend.type: frontend type trtllm_serve is the engine serving clients itself")


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
