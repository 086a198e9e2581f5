"""Every public recipe of the corpus loads and renders (both layouts, every variant), or fails with
its documented clear error; concrete flags of a few of them."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_config_point
from cookbookgen.recipes.bundle import variant_names
from cookbookgen.recipes.load import read_yaml_file
from cookbookgen.recipes.workspace import Workspace, model_id
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.shell import block_argv, command_lines, format_block

from conftest import CORPUS
from recipes_factory import dump, minimal_recipe

INFERENCEX = CORPUS / "inferencex"
# The recipes of the issue-31 excerpts (inferencex-843c6254/, inferencex-e2e-slice/, inferencex-e2e-masters/) are walked by their own tests
# (test_inferencex_scripts.py, test_current_layout.py); their v1 vLLM recipes need the srtctl branch's reading of
# backend.vllm_config to pass the classification check below.
RECIPES = sorted(p for p in CORPUS.rglob("*.yaml") if ("srt-slurm-recipes" in str(p) or "examples" in str(p))
                 and p.relative_to(CORPUS).parts[0] not in ("inferencex-843c6254", "inferencex-e2e-slice", "inferencex-e2e-masters"))
# The corpus excerpt names recipes it does not hold (it says so in its header): a clear error is expected.
MISSING = {"glm5.2-fp4-gb300-dynamo-sglang-agentic-agg", "glm5.2-fp4-gb300-dynamo-sglang-agentic-disagg",
           "dsv4-fp4-b200-dynamo-sglang-agentic-agg", "dsv41flash-fp4-h200-vllm-agentic-dspark"}
# SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE is set in these recipes (the base, or the agg / decode role of the GLM-5.2
# GB200 recipes of inferencex-git): the review checklist prohibits it.
PROHIBITED = {"agg-pareto-variants.yaml", "glm5.2-agentx-agg.yaml", "glm5.2-agentx.yaml", "agg-gb200-tp8-c2-mtp.yaml",
              "agg-gb200-tp8-c4-mtp.yaml", "agg-gb200-tp8-c8-mtp.yaml", "disagg-gb200-1p4d-dep8-tp4-c48-mtp.yaml",
              "disagg-gb200-1p6d-dep8-tp4-c45-mtp.yaml", "disagg-gb200-2p1d-dep8-dep16-c128-mtp.yaml"}


@pytest.fixture(scope="module")
def corpus_ws() -> Workspace:
    return Workspace(INFERENCEX)


def _variants() -> list[tuple[Path, str | None]]:
    out = []
    for path in RECIPES:
        names = variant_names(read_yaml_file(path)) or [None]
        out.extend((path, n) for n in names)
    return out


@pytest.mark.parametrize("path,selector", _variants(), ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_every_corpus_recipe_variant_renders(corpus_ws: Workspace, policy, path: Path, selector: str | None) -> None:
    ref = f"{path}:{selector}" if selector else str(path)
    if path.name in PROHIBITED:     # rendered as it ran, and flagged (POLICY.md; issue 31)
        point = corpus_ws.bare_recipe(ref)
        dep = render(point.recipe, point.typed, RenderContext("org/model", policy))
        assert any(s.cls == "prohibited" and s.path.endswith(".env.SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE") for s in dep.settings)
        assert any(b.env.get("SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE") == "1" for b in dep.blocks)
        return
    point = corpus_ws.bare_recipe(ref)
    try:
        model = model_id(point)
    except CookbookError:
        model = "org/model"  # recipes naming a cluster alias only; the master config supplies the id
    deployment = render(point.recipe, point.typed, RenderContext(model, policy))
    workers = [b for b in deployment.blocks if b.kind == "worker"]
    assert workers and all(b.args[0] == ("--model-path", model) or b.cmd == f"vllm serve {model}"
                           or (b.cmd == "python3 -m dynamo.vllm" and b.args[0] == ("--model", model)) for b in workers)
    assert not [s for s in deployment.settings if s.cls == "unclassified"]
    for block in deployment.blocks:       # every command is valid bash and quotes back to its argv
        text = "\n".join(command_lines(block))
        assert subprocess.run(["bash", "-n"], input=format_block(block), text=True).returncode == 0
        assert shlex.split(text.replace("\\\n", " ")) == block_argv(block)
        for name, content in block.files.items():     # an options file holds the role's options, as the recipe merges them
            if name.startswith("trtllm_config_"):
                assert yaml.safe_load(content) == point.typed.roles[block.role].options


def _master_points() -> list[tuple[str, str]]:
    ws = Workspace(INFERENCEX)
    return [(key, pid) for key, entry in ws.entries().items() for pid in entry.point_ids()]


@pytest.mark.parametrize("key,point", _master_points())
def test_every_master_point_renders_or_names_its_missing_recipe(corpus_ws: Workspace, policy, key: str, point: str) -> None:
    if key in MISSING:
        with pytest.raises(CookbookError) as info:
            render_config_point(corpus_ws, policy, key, point)
        (problem,) = info.value.problems
        assert problem.file.endswith("nvidia-master.excerpt.yaml") and problem.line > 0
        assert problem.message.startswith("recipe file not found")
        return
    rendered = render_config_point(corpus_ws, policy, key, point)
    assert rendered.deployment.model == corpus_ws.entry(key).model


def test_dsv4_disagg_c960_commands(corpus_ws: Workspace, policy) -> None:
    d = render_config_point(corpus_ws, policy, "dsv4-fp4-gb300-dynamo-sglang-agentic-disagg", "c960").deployment
    kinds = [b.kind for b in d.blocks]
    assert kinds == ["etcd", "nats", "mooncake-master"] + ["mooncake-store"] * 4 + ["nginx", "dynamo-frontend", "worker", "worker"]
    prefill, decode = (b for b in d.blocks if b.kind == "worker")
    assert (prefill.workers, prefill.nodes_per_worker, decode.nodes_per_worker) == (2, 2, 4)
    assert ("--dist-init-addr", "$PREFILL_HEAD_IP:20000") in prefill.args and ("--nnodes", "2") in prefill.args
    assert prefill.env["MOONCAKE_DEVICE"] == "$IB_DEVICES" and prefill.env["OMP_NUM_THREADS"] == "1"
    assert prefill.env["MOONCAKE_MASTER"] == "$MOONCAKE_MASTER_IP:8700"
    assert "PYTHONUNBUFFERED" not in prefill.env and "PIP_BREAK_SYSTEM_PACKAGES" not in prefill.env
    assert ("--model-path", "deepseek-ai/DeepSeek-V4-Pro-0813") == prefill.args[0]
    assert not any(a[0] in ("--enable-metrics", "--model-path") and a[-1] == "/model/" for a in prefill.args)
    (fe,) = [b for b in d.blocks if b.kind == "dynamo-frontend"]
    assert fe.count == 5 and fe.args[0] == ("--http-port", "8180")
    (nats,) = [b for b in d.blocks if b.kind == "nats"]
    assert nats.files["nats.conf"].startswith("max_payload: 33554432\n")
    master = next(b for b in d.blocks if b.kind == "mooncake-master")
    assert master.args[-1] == ("--eviction_high_watermark_ratio", "0.90")
    stores = [b for b in d.blocks if b.kind == "mooncake-store"]      # placement.node: decode -> every decode node
    assert {(b.count_nodes, b.where) for b in stores} == {(4, "on each of the 4 decode nodes")}


def test_single_node_bundle_selects_by_tp_and_conc(corpus_ws: Workspace, policy) -> None:
    r = render_config_point(corpus_ws, policy, "dsv41flash-fp4-gb300-sglang-agentic-dspark", "tp4-ep4/c64")
    assert r.point.recipe.selector == "override_tp4_c64"
    (worker,) = r.deployment.blocks
    assert worker.cmd == "python3 -m sglang.launch_server"
    assert ("--chunked-prefill-size", "8192") in worker.args and ("--prefill-decode-interval", "16") in worker.args
    assert worker.env["SGLANG_RAGGED_VERIFY_MODE"] == "static"


def test_v1_low_latency_recipe(policy) -> None:
    path = CORPUS / "srt-slurm/srt-slurm-recipes/recipes/multi-node/DeepSeek-R1/GB200/1k1k/sglang/1k1k-low-latency.yaml"
    point = Workspace(CORPUS).bare_recipe(str(path))
    d = render(point.recipe, point.typed, RenderContext(model_id(point), policy))
    prefill = next(b for b in d.blocks if b.role == "prefill")
    decode = next(b for b in d.blocks if b.role == "decode")
    assert prefill.args[0] == ("--model-path", "nvidia/DeepSeek-R1-0528-FP4-v2")
    assert ("--disaggregation-bootstrap-port", "30001") in prefill.args and ("--scheduler-recv-interval", "10") in prefill.args
    assert decode.workers == 2 and ("--prefill-round-robin-balance",) in decode.args
    assert "infra.etcd_nats_dedicated_node" in {s.path for s in d.settings if s.cls == "harness-only"}
    # 1 + num_additional_frontends (3) asks for 4, but srtctl puts nginx on the head node and a frontend on
    # each other node: this recipe's three worker nodes leave room for 2.
    assert [b.count for b in d.blocks if b.kind == "dynamo-frontend"] == [2]
    assert [b.kind for b in d.blocks if b.kind == "nginx"] == ["nginx"]
    # ... and says so: the frontends run on worker nodes (no "CPU nodes" for a reader to provision on top of
    # the job's nodes), nginx on the head node
    where = {b.kind: b.where for b in d.blocks}
    assert where["dynamo-frontend"] == "on 2 worker nodes other than the head node, one each (FRONTEND_0_IP..FRONTEND_1_IP)"
    assert where["nginx"] == "on the head node (the first worker node), which clients connect to"


def test_zip_override_variant_values(policy) -> None:
    path = CORPUS / "srt-slurm/srt-slurm-recipes/recipes/multi-node/DeepSeek-V4-Pro/GB300/8k1k/sglang/agg/8k1k.yaml"
    point = Workspace(CORPUS).bare_recipe(f"{path}:zip_override_8k1k_hightpt[4]")
    d = render(point.recipe, point.typed, RenderContext(model_id(point), policy))
    decode = next(b for b in d.blocks if b.role == "decode")
    prefill = next(b for b in d.blocks if b.role == "prefill")
    assert ("--tensor-parallel-size", "40") in decode.args and ("--ep-num-redundant-experts", "16") in decode.args
    assert decode.nodes_per_worker == 10 and prefill.workers == 8


def test_sweep_substitutes_typed_values(policy) -> None:
    path = CORPUS / "srt-slurm/srt-slurm-recipes/recipes/single-node/Qwen3.5/H200/sglang/1k1k-mtp.yaml"
    point = Workspace(CORPUS).bare_recipe(f"{path}:sweep[3]")
    d = render(point.recipe, point.typed, RenderContext(model_id(point), policy))
    (worker,) = [b for b in d.blocks if b.kind == "worker"]
    assert ("--cuda-graph-max-bs", "16") in worker.args and ("--tensor-parallel-size", "8") in worker.args
    assert "DYN_HEALTH_CHECK_ENABLED=false" in format_block(worker)


def test_colocated_example_pins_gpus_and_ports(policy) -> None:
    path = CORPUS / "srt-slurm/srt-slurm/examples/sglang/dynamo-disagg.yaml"
    point = Workspace(CORPUS).bare_recipe(str(path))
    d = render(point.recipe, point.typed, RenderContext("Qwen/Qwen3-0.6B", policy))
    prefill, decode = (b for b in d.blocks if b.kind == "worker")
    assert (prefill.env["CUDA_VISIBLE_DEVICES"], decode.env["CUDA_VISIBLE_DEVICES"]) == ("0", "1")
    assert ("--port", "30000") in prefill.args and ("--port", "30032") in decode.args


def test_underscore_arg_keys_are_the_dashed_flags_srtctl_passes(tmp_path: Path, policy) -> None:
    # srtctl writes every `_` of a role arg key as `-` (`_config_to_cli_args`); the cookbook printed
    # `--max_running_requests 5`, which SGLang refuses, and counted no GPUs for `tensor_parallel_size`.
    path = tmp_path / "r.yaml"
    path.write_text(dump(minimal_recipe(roles={"agg": {"args": {"tensor-parallel-size": None, "tensor_parallel_size": 8,
                                                               "max_running_requests": 5, "enable_metrics": True}}})))
    point = Workspace(CORPUS).bare_recipe(str(path))
    d = render(point.recipe, point.typed, RenderContext("org/Model-1", policy))
    (worker,) = [b for b in d.blocks if b.kind == "worker"]
    assert ("--max-running-requests", "5") in worker.args and ("--tensor-parallel-size", "8") in worker.args
    assert not [a for a in worker.args if "_" in a[0]] and ("--enable-metrics",) not in worker.args
    assert {s.path: s.cls for s in d.settings}["roles.agg.args.enable-metrics"] == "harness-only"


def test_a_frontend_switch_set_to_false_is_not_passed(tmp_path: Path, policy) -> None:
    # srtctl passes no flag for `false` (frontends/dynamo.py, sglang.py); the cookbook printed
    # `--foo false`, which a store_true flag refuses ("unrecognized arguments: false").
    path = tmp_path / "r.yaml"
    path.write_text(dump(minimal_recipe(frontend={"args": {"router-mode": "kv", "no-kv-events": False}})))
    point = Workspace(CORPUS).bare_recipe(str(path))
    d = render(point.recipe, point.typed, RenderContext("org/Model-1", policy))
    (fe,) = [b for b in d.blocks if b.kind == "dynamo-frontend"]
    assert ("--router-mode", "kv") in fe.args and not [a for a in fe.args if a[0] == "--no-kv-events"]
    (setting,) = [s for s in d.settings if s.path == "frontend.args.no-kv-events"]
    assert setting.cls == "default-equivalent" and "srtctl passes no flag" in setting.reason
