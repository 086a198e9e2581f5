"""The current InferenceX layout (issue 31; tests/data/corpus/inferencex-e2e-slice/, sources in its SOURCES.md):
single-node rows naming `srt-recipe:` with no selector use the variant that agrees with the row (TP, EP,
DP attention, KV mode) and the point; the harness's `@fabric.*` values become shell placeholders; a
framework whose rows all name recipes is read through them; the derived SGLang-router variant of a
disaggregated cell pairs each prefill URL with the bootstrap port the worker sets; ATOM behind AToMesh
as srtctl 2.x launches it; and both current masters (tests/data/corpus/inferencex-e2e-masters/): every point
of the 64 configs whose recipes are there renders with nothing lost or is refused at its line."""

from __future__ import annotations

import json
import re

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
    assert len(configs) == 11 and all(c["problem"] is None for c in configs)
    assert all(p["problem"] is None for c in configs for p in c["points"])     # list resolves points; render refuses one (below)


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


# srtctl 2.x's ATOM launch, by hand from SemiAnalysisAI/srt-slurm (not runnable here), each rule cited:
ATOM_WORKER = ("SemiAnalysisAI/srt-slurm@05a3cec4 src/srtctl/backends/atom.py AtomProtocol.build_worker_command: "
               "env ATOM_HOST_IP=<node IP>, python3 -m atom.entrypoints.openai_server --model M --host 0.0.0.0 --server-port P "
               "-tp <the worker's GPU count>, --kv-transfer-config for prefill/decode (_kv_transfer_config: kv_role, "
               "kv_connector mooncake, proxy_ip, handshake_port), then _config_to_cli_args: the role's args sorted by key, "
               "spelled as written, True a bare switch, False/None no flag")
ATOMESH = ("SemiAnalysisAI/srt-slurm@0e8514e7 src/srtctl/frontends/atomesh.py AtomeshFrontend (atomesh launch, "
           "--pd-disaggregation, no bootstrap ports, get_managed_frontend_args: --backend atom) over "
           "@06275a3e src/srtctl/frontends/static_router.py StaticRouterFrontend.build_router_command / start_frontends "
           "(--worker-urls or --prefill/--decode, --host 0.0.0.0 --port, managed args, get_frontend_args_list: "
           "frontend.args in order, '_' as '-')")
# Placeholders and ports are cookbookgen's (the same exclusions as the schema-2 expectations): srtctl's
# worker IPs are $NODE_IP / $<ROLE>_<i>_HEAD_IP, its allocated ports the port table's (rules/engines.yaml atom.srtctl).
ATOM_CMD = ["python3", "-m", "atom.entrypoints.openai_server"]


def _argv(block: Block) -> list[str]:
    return [*block.cmd.split(), *(w for arg in block.args for w in arg)]


def _atom_point(ws: Workspace, key: str, point: str) -> dict[str, Block]:
    entry = ws.entry(key)
    check_framework(entry)
    row, conc = next((r, c) for r in entry.rows for c in r.concs if f"{r.slug}/c{c}" == point)
    deployment = render_point(ws.point(entry, row, conc), load_policy(None), False, RunMemo())
    return {b.role or b.kind: b for b in deployment.blocks}


def test_atom_behind_atomesh_aggregated_as_srtctl_launches_it(ws: Workspace) -> None:
    """dsr1-fp4-mi355x-atom tp4/c4 (8k1k.yaml base + zip_override_tp4_ep1[0], which sets only the benchmark's CONC)."""
    blocks = _atom_point(ws, "dsr1-fp4-mi355x-atom", "tp4/c4")
    assert _argv(blocks["atomesh"]) == ["atomesh", "launch", "--worker-urls", "http://$AGG_0_HEAD_IP:30000",
                                        "--host", "0.0.0.0", "--port", "8000", "--backend", "atom"], ATOMESH
    worker = blocks["agg"]
    assert _argv(worker) == [*ATOM_CMD, "--model", "amd/DeepSeek-R1-0528-MXFP4-Preview", "--host", "0.0.0.0",
                             "--server-port", "30000", "-tp", "4",
                             "--block-size", "16", "--kv_cache_dtype", "fp8", "--max-model-len", "10240"], ATOM_WORKER
    assert worker.env == {"ATOM_HOST_IP": "$NODE_IP", "OMP_NUM_THREADS": "1"}
    assert list(blocks) == ["atomesh", "agg"]       # the router starts before the worker it lists


def test_atom_switches_keep_their_native_spelling(ws: Workspace) -> None:
    """dsr1-fp8-mi355x-atom-mtp: `no-enable_prefix_caching: true` is a bare switch spelled as written, after
    `method`, before `num-speculative-tokens` (sorted by key: 'no-' < 'num')."""
    worker = _atom_point(ws, "dsr1-fp8-mi355x-atom-mtp", "tp8/c4")["agg"]
    assert _argv(worker) == [*ATOM_CMD, "--model", "deepseek-ai/DeepSeek-R1-0528", "--host", "0.0.0.0", "--server-port", "30000",
                             "-tp", "8", "--kv_cache_dtype", "fp8", "--method", "mtp", "--no-enable_prefix_caching",
                             "--num-speculative-tokens", "3"], ATOM_WORKER


def test_atom_prefill_and_decode_behind_atomesh(ws: Workspace) -> None:
    """dsv4 1P1D (disagg-lmcache-dspark.yaml:override_tp8_c1): the router in P/D mode with the override's
    frontend args after the base's (prometheus-port is held back by the policy: the harness's metrics port);
    both workers share the `*server` args; decode adds its capture sizes; each gets its Mooncake role."""
    blocks = _atom_point(ws, "dsv4-fp4-mi355x-atom-disagg-agentic-lmcache-dspark", "1p1d-tp8-tp8/c1")
    assert _argv(blocks["atomesh"]) == [
        "atomesh", "launch", "--pd-disaggregation", "--prefill", "http://$PREFILL_0_HEAD_IP:30000",
        "--decode", "http://$DECODE_0_HEAD_IP:30000", "--host", "0.0.0.0", "--port", "8000", "--backend", "atom",
        "--log-level", "info", "--disable-health-check", "--disable-circuit-breaker",
        "--prefill-policy", "round_robin", "--decode-policy", "round_robin", "--atom-pd-rank-mapping-policy", "none"], ATOMESH
    server = ["--attn-prefill-chunk-size", "16384", "--block-size", "256"]
    rest = ["--cudagraph-mode", "FULL", "--enable-prefix-caching", "--gpu-memory-utilization", "0.9", "--index-cache-dtype", "fp4",
            "--kv_cache_dtype", "fp8", "--level", "3", "--max-model-len", "1000000", "--max-num-batched-tokens", "16384",
            "--max-num-seqs", "2", "--method", "dspark", "--num-speculative-tokens", "3",
            "--served-model-name", "deepseek-ai/DeepSeek-V4-Pro-0813", "--state-checkpoint-interval-tokens", "8192", "--trust-remote-code"]
    for role, kv_role, capture in (("prefill", "kv_producer", []), ("decode", "kv_consumer", ["--cudagraph-capture-sizes", "[1,2]"])):
        kv = json.dumps({"kv_role": kv_role, "kv_connector": "mooncake", "proxy_ip": "$NODE_IP", "handshake_port": 6550},
                        separators=(",", ":"))
        assert _argv(blocks[role]) == [*ATOM_CMD, "--model", "deepseek-ai/DeepSeek-V4-Pro-0813", "--host", "0.0.0.0",
                                       "--server-port", "30000", "-tp", "8", "--kv-transfer-config", kv,
                                       *server, *capture, *rest], ATOM_WORKER
        assert blocks[role].env["ATOM_HOST_IP"] == "$NODE_IP" and blocks[role].env["ATOM_PREFIX_CACHE_POLICY"] == "lru"


PATCH_507 = ("SemiAnalysisAI/InferenceX@30933546 inferencex-e2e/runners/srt-slurm/patches/507-lmcache-server-atom-sglang.patch, "
             "which the runners apply to srtctl (its atom.py base has proxy_ip, as at 05a3cec4): build_worker_command pops "
             "extra-kv-connectors; _kv_transfer_config puts Mooncake first for P/D, then each extra connector (lmcache_mp gets "
             "lmcache.mp.port 8750 unless set); one connector as is, several as {kv_connector: multi, connectors: [...]}")


def test_atom_extra_kv_connectors_ride_beside_mooncake_in_a_multi_connector(ws: Workspace) -> None:
    """dsv4 1P1D c256 (override_dpa8_c256_lmcache): prefill's lmcache_offload connector joins Mooncake in ATOM's
    `multi` connector, the mapping as written (nulls, empty lists) and never an --extra-kv-connectors flag;
    decode, without extra connectors, keeps the bare Mooncake connector."""
    blocks = _atom_point(ws, "dsv4-fp4-mi355x-atom-disagg-agentic-lmcache-dspark", "1p1d-dep8-dep8/c256")
    recipe = yaml.safe_load((SLICE / "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv4/atom/mi355x-fp4/agentx/"
                                     "disagg-lmcache-dspark.yaml").read_text())
    offload = recipe["override_dpa8_c256_lmcache"]["roles"]["prefill"]["args"]["extra-kv-connectors"]
    configs = {role: json.loads(next(a[1] for a in blocks[role].args if a[0] == "--kv-transfer-config")) for role in ("prefill", "decode")}
    assert configs["prefill"] == {"kv_connector": "multi", "connectors": [
        {"kv_role": "kv_producer", "kv_connector": "mooncake", "proxy_ip": "$NODE_IP", "handshake_port": 6550}, *offload]}, PATCH_507
    assert configs["decode"] == {"kv_role": "kv_consumer", "kv_connector": "mooncake", "proxy_ip": "$NODE_IP", "handshake_port": 6550}
    assert not any(a[0] == "--extra-kv-connectors" for b in blocks.values() for a in b.args)
    assert offload[0]["lmcache.local_disk"] is None and '"lmcache.local_disk":null' in json.dumps(configs["prefill"], separators=(",", ":"))


def test_an_lmcache_mp_connector_dials_the_lmcache_server_port_unless_it_names_one(tmp_path) -> None:
    """An aggregated ATOM worker with one extra connector runs it alone; lmcache_mp gets lmcache.mp.port 8750 (PATCH_507)."""
    from cookbookgen.recipes.workspace import Workspace as Ws

    recipe = tmp_path / "mp.yaml"
    recipe.write_text("schema: 2\nname: a\nmodel: {path: \"hf:org/m\"}\nresources: {gpu_type: mi355x, gpus_per_node: 8}\n"
                      "frontend: {type: atomesh}\nengine: atom\nroles:\n  agg:\n    nodes: 1\n    workers: 1\n    gpus: 8\n"
                      "    args:\n      extra-kv-connectors:\n        - {kv_connector: lmcache_mp, kv_role: offload, "
                      "kv_connector_extra_config: {lmcache.mp.host: \"tcp://127.0.0.1\"}}\n")
    point = Ws(tmp_path).bare_recipe(str(recipe))
    from cookbookgen.render.deploy import RenderContext, render
    worker = next(b for b in render(point.recipe, point.typed, RenderContext("org/m", load_policy(None))).blocks if b.kind == "worker")
    assert json.loads(next(a[1] for a in worker.args if a[0] == "--kv-transfer-config")) == {
        "kv_connector": "lmcache_mp", "kv_role": "offload",
        "kv_connector_extra_config": {"lmcache.mp.port": 8750, "lmcache.mp.host": "tcp://127.0.0.1"}}, PATCH_507


def test_atom_variants_cookbookgen_cannot_launch_are_refused_at_their_line(ws: Workspace, tmp_path, capsys) -> None:
    """A setup_script (it starts the LMCache server ATOM's lmcache_mp tier needs) is refused, located; so is a
    list of mappings in any other engine's args (it is no flag value)."""
    from cookbookgen.errors import CookbookError

    entry = ws.entry("dsv4-fp4-mi355x-atom-agentic-mtp")
    row = next(r for r in entry.rows if 256 in r.concs)
    with pytest.raises(CookbookError) as setup:
        render_point(ws.point(entry, row, 256), load_policy(None), False, RunMemo())
    assert str(setup.value.problems[0]).startswith(
        "inferencex-e2e/benchmarks/single_node/srt-slurm-recipes/dsv4/atom/mi355x-fp4-mtp/agentic.yaml:242: setup_script: srtctl runs")
    recipe = tmp_path / "sg.yaml"
    recipe.write_text("schema: 2\nname: a\nmodel: {path: \"hf:org/m\"}\nfrontend: {type: sglang}\nengine: sglang\n"
                      "roles:\n  agg:\n    gpus: 1\n    args:\n      extra-kv-connectors: [{kv_connector: x}]\n")
    assert main(["render", "--recipe", str(recipe)]) == 2
    assert capsys.readouterr().err.startswith(f"cookbookgen: error: {recipe}:10: roles.agg.args.extra-kv-connectors: a list of "
                                              "mappings is not a value this engine's flags take")


def test_srtctl_refusals_of_atom_recipes_are_located(tmp_path, capsys) -> None:
    """atomesh routes only to ATOM and ATOM runs only behind atomesh (AtomeshFrontend.backend_type, build_worker_command);
    an arg srtctl sets itself is refused (build_worker_command's reserved set)."""
    base = ("schema: 2\nname: a\nmodel: {{path: \"hf:org/m\"}}\nresources: {{gpu_type: mi355x, gpus_per_node: 8}}\n"
            "frontend:\n  type: {front}\nengine: {engine}\nroles:\n  agg: {{nodes: 1, workers: 1, gpus: 8, args: {{{args}}}}}\n")
    cases = [("atomesh", "sglang", "", ":6: frontend.type: frontend type atomesh routes only to engine 'atom', not 'sglang'"),
             ("sglang", "atom", "", ":7: engine: engine 'atom' is not supported yet"),
             ("atomesh", "atom", "server-port: 9", ":9: roles.agg.args.server-port: srtctl sets --server-port of an ATOM worker itself"),
             ("atomesh", "atom", "extra-kv-connectors: x", ":9: roles.agg.args.extra-kv-connectors: a list of KV connector mappings expected")]
    for i, (front, engine, args, error) in enumerate(cases):
        recipe = tmp_path / f"r{i}.yaml"
        recipe.write_text(base.format(front=front, engine=engine, args=args))
        assert main(["render", "--recipe", str(recipe)]) == 2
        assert capsys.readouterr().err.startswith(f"cookbookgen: error: {recipe}{error}"), error


def test_every_point_of_the_slice_renders_with_nothing_lost_or_is_refused_located(ws: Workspace) -> None:
    """The independent leaf check (nothing_dropped.unmapped) over every point of the slice's configs."""
    from cookbookgen.errors import CookbookError
    from nothing_dropped import effective, unmapped

    rendered, refused = 0, []
    for key, entry in ws.entries().items():
        check_framework(entry)
        for row in entry.rows:
            for conc in row.concs:
                try:
                    point = ws.point(entry, row, conc)
                    deployment = render_point(point, load_policy(None), False, RunMemo())
                except CookbookError as exc:
                    refused.append((key, f"{row.slug}/c{conc}", str(exc.problems[0]).split(": ")[0]))
                    continue
                assert unmapped(effective(SLICE / point.recipe.file, point.recipe.selector), deployment) == [], (key, row.slug, conc)
                rendered += 1
    assert rendered == 81
    assert refused == [("dsv4-fp4-mi355x-atom-agentic-mtp", "dep8/c256",
                        "inferencex-e2e/benchmarks/single_node/srt-slurm-recipes/dsv4/atom/mi355x-fp4-mtp/agentic.yaml:242")]


MASTERS = CORPUS / "inferencex-e2e-masters"     # both current masters whole, and the recipes of 64 configs (SOURCES.md)


def _complete_configs() -> list[str]:
    text = (MASTERS / "SOURCES.md").read_text().split("Complete configs:", 1)[1]
    return re.findall(r"^- `([^`]+)`", text, re.M)


def test_sixty_configs_of_the_current_masters_render_every_point_with_nothing_lost() -> None:
    """Every point of the 64 configs whose recipes are here renders and passes the independent leaf check,
    or is refused at its line; 61 configs render whole, covering every framework the masters use but tilert."""
    from cookbookgen.errors import CookbookError
    from nothing_dropped import effective, unmapped

    ws, policy = Workspace(MASTERS), load_policy(None)
    whole: dict[str, int] = {}
    points: dict[str, int] = {}
    refused = []
    for key in _complete_configs():
        entry = ws.entry(key)
        check_framework(entry)
        ok = True
        for row in entry.rows:
            for conc in row.concs:
                try:
                    point = ws.point(entry, row, conc)
                    deployment = render_point(point, policy, False, RunMemo())
                except CookbookError as exc:
                    ok = False
                    refused.append((key, f"{row.slug}/c{conc}", str(exc.problems[0]).split(": ")[0]))
                    continue
                assert unmapped(effective(MASTERS / point.recipe.file, point.recipe.selector), deployment) == [], (key, row.slug, conc)
                points[entry.framework] = points.get(entry.framework, 0) + 1
        whole[entry.framework] = whole.get(entry.framework, 0) + ok
    assert whole == {"atom": 7, "atom-disagg": 1, "dynamo-sglang": 7, "dynamo-trt": 3, "dynamo-vllm": 3, "sglang": 21,
                     "sglang-disagg": 4, "tilert": 0, "trt": 8, "vllm": 7}
    assert sum(whole.values()) == 61
    assert points == {"atom": 82, "atom-disagg": 5, "dynamo-sglang": 50, "dynamo-trt": 19, "dynamo-vllm": 27, "sglang": 159,
                      "sglang-disagg": 45, "trt": 66, "vllm": 88}
    single = "inferencex-e2e/benchmarks/single_node/srt-slurm-recipes/"
    assert refused == [
        ("dsv4-fp4-mi355x-atom-agentic-mtp", "dep8/c256", single + "dsv4/atom/mi355x-fp4-mtp/agentic.yaml:242"),
        ("dsv41flash-fp4-mi355x-vllm-agentic-dspark", "tp4/c128", "inferencex-e2e/configs/amd-master.yaml:1478"),
        ("dsv41flash-fp4-mi355x-vllm-agentic-dspark", "tp2/c128", "inferencex-e2e/configs/amd-master.yaml:1479"),
        ("glm5.3-fp8-mi355x-tilert-agentic", "1p1d-tp8-tp8/c1",
         "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/glm5.3/tilert/mi355x-fp8/agentx/disagg-1p1d-tp8-mtp.yaml:18")]


def test_the_leaf_check_catches_a_dropped_extra_kv_connector(ws: Workspace) -> None:
    """Not vacuous: the c256 prefill worker with Mooncake alone in its --kv-transfer-config fails the leaf check,
    naming the extra connector's settings."""
    from nothing_dropped import effective, unmapped

    entry = ws.entry("dsv4-fp4-mi355x-atom-disagg-agentic-lmcache-dspark")
    row = next(r for r in entry.rows if 256 in r.concs)
    point = ws.point(entry, row, 256)
    deployment = render_point(point, load_policy(None), False, RunMemo())

    def mooncake_only(block: Block) -> Block:
        args = tuple((a[0], json.dumps(json.loads(a[1])["connectors"][0])) if a[0] == "--kv-transfer-config" else a for a in block.args)
        return block.model_copy(update={"args": args})
    blocks = tuple(mooncake_only(b) if b.role == "prefill" else b for b in deployment.blocks)
    problems = unmapped(effective(SLICE / point.recipe.file, point.recipe.selector), deployment.model_copy(update={"blocks": blocks}))
    assert problems and all(p.startswith("roles.prefill.args.extra-kv-connectors.0.") for p in problems)
    assert len(problems) == 15
