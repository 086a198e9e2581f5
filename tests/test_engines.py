"""vLLM recipes of the corpus rendered whole: the commands below are written by hand from reading the
recipes (dsv41flash/vllm/mi325x-fp4/agentx/*.yaml), not copied from the tool's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from cookbookgen.cli import main
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.shell import command_lines

from conftest import CORPUS

VLLM = CORPUS / "inferencex/inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv41flash/vllm/mi325x-fp4/agentx"
MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"

# `environment:` reaches every process; HF_HUB_CACHE, PYTHONUNBUFFERED and the two log levels are harness-only.
ENV = """OMP_NUM_THREADS=1 \\
VLLM_ENGINE_READY_TIMEOUT_S=3600 \\
VLLM_ROCM_USE_AITER=1 \\
VLLM_ROCM_USE_AITER_MOE=1 \\
VLLM_USE_BREAKABLE_CUDAGRAPH=0 \\
VLLM_USE_RUST_FRONTEND=1 \\"""

ENGINE_ARGS = """  --compilation-config '{"cudagraph_mode":"FULL_DECODE_ONLY"}' \\
  --disable-uvicorn-access-log \\
  --enable-auto-tool-choice \\
  --enable-prompt-tokens-details \\
  --engram-config '{"cpu_offload":%s}' \\
  --gpu-memory-utilization 0.9 \\
  --language-model-only \\
  --max-cudagraph-capture-size 1024 \\
  --max-model-len 1048576 \\
  --max-num-batched-tokens %s \\
  --max-num-seqs 128 \\
  --moe-backend aiter \\
  --no-swa-bounded-replay \\
  --reasoning-parser deepseek_v41 \\
  --served-model-name deepseek-ai/DeepSeek-V4.1-Flash \\
  --speculative-config '{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","rejection_sample_method":"block","enable_adaptive_verification":false}' \\
  --tensor-parallel-size %s \\
  --tokenizer-mode deepseek_v41 \\
  --tool-call-parser deepseek_v41"""

DISAGG_COLOCATED_C4 = [
    f"""{ENV}
vllm-router \\
  --host 0.0.0.0 \\
  --port 8000 \\
  --vllm-pd-disaggregation \\
  --prefill "http://$PREFILL_0_HEAD_IP:8100" \\
  --decode "http://$DECODE_0_HEAD_IP:8101" \\
  --prefill-policy consistent_hash \\
  --decode-policy consistent_hash""",
    f"""CUDA_VISIBLE_DEVICES=0,1,2,3 \\
OMP_NUM_THREADS=1 \\
VLLM_ENGINE_READY_TIMEOUT_S=3600 \\
VLLM_NIXL_SIDE_CHANNEL_HOST="$NODE_IP" \\
VLLM_NIXL_SIDE_CHANNEL_PORT=5400 \\
VLLM_PORT=20000 \\
VLLM_ROCM_USE_AITER=1 \\
VLLM_ROCM_USE_AITER_MOE=1 \\
VLLM_USE_BREAKABLE_CUDAGRAPH=0 \\
VLLM_USE_RUST_FRONTEND=1 \\
vllm serve deepseek-ai/DeepSeek-V4.1-Flash \\
  --host 0.0.0.0 \\
  --port 8100 \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}}' \\
{ENGINE_ARGS % ("false", "8192", "4")}""",
    f"""CUDA_VISIBLE_DEVICES=4,5,6,7 \\
OMP_NUM_THREADS=1 \\
VLLM_ENGINE_READY_TIMEOUT_S=3600 \\
VLLM_NIXL_SIDE_CHANNEL_HOST="$NODE_IP" \\
VLLM_NIXL_SIDE_CHANNEL_PORT=5401 \\
VLLM_PORT=20050 \\
VLLM_ROCM_USE_AITER=1 \\
VLLM_ROCM_USE_AITER_MOE=1 \\
VLLM_USE_BREAKABLE_CUDAGRAPH=0 \\
VLLM_USE_RUST_FRONTEND=1 \\
vllm serve deepseek-ai/DeepSeek-V4.1-Flash \\
  --host 0.0.0.0 \\
  --port 8101 \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_consumer","kv_load_failure_policy":"fail"}}' \\
{ENGINE_ARGS % ("false", "8192", "4")}""",
]

AGG_SMG_2TP4_C2 = [
    f"""{ENV}
smg \\
  --host 0.0.0.0 \\
  --port 8000 \\
  --worker-urls "http://$AGG_0_HEAD_IP:8100" "http://$AGG_1_HEAD_IP:8101" \\
  --policy cache_aware \\
  --cache-index tree \\
  --balance-abs-threshold 0 \\
  --balance-rel-threshold 1.5""",
    f"""CUDA_VISIBLE_DEVICES=0,1,2,3 \\
OMP_NUM_THREADS=1 \\
VLLM_ENGINE_READY_TIMEOUT_S=3600 \\
VLLM_PORT=20000 \\
VLLM_ROCM_USE_AITER=1 \\
VLLM_ROCM_USE_AITER_MOE=1 \\
VLLM_USE_BREAKABLE_CUDAGRAPH=0 \\
VLLM_USE_RUST_FRONTEND=1 \\
vllm serve deepseek-ai/DeepSeek-V4.1-Flash \\
  --host 0.0.0.0 \\
  --port 8100 \\
{ENGINE_ARGS % ("true", "16384", "4")}""",
    f"""CUDA_VISIBLE_DEVICES=4,5,6,7 \\
OMP_NUM_THREADS=1 \\
VLLM_ENGINE_READY_TIMEOUT_S=3600 \\
VLLM_PORT=20050 \\
VLLM_ROCM_USE_AITER=1 \\
VLLM_ROCM_USE_AITER_MOE=1 \\
VLLM_USE_BREAKABLE_CUDAGRAPH=0 \\
VLLM_USE_RUST_FRONTEND=1 \\
vllm serve deepseek-ai/DeepSeek-V4.1-Flash \\
  --host 0.0.0.0 \\
  --port 8101 \\
{ENGINE_ARGS % ("true", "16384", "4")}""",
]

AGG_DIRECT_TP8_C1 = [
    f"""OMP_NUM_THREADS=1 \\
VLLM_ENGINE_READY_TIMEOUT_S=3600 \\
VLLM_PORT=20000 \\
VLLM_ROCM_USE_AITER=1 \\
VLLM_ROCM_USE_AITER_MOE=1 \\
VLLM_USE_BREAKABLE_CUDAGRAPH=0 \\
VLLM_USE_RUST_FRONTEND=1 \\
vllm serve deepseek-ai/DeepSeek-V4.1-Flash \\
  --host 0.0.0.0 \\
  --port 8000 \\
{ENGINE_ARGS % ("false", "16384", "8")}""",
]


@pytest.mark.parametrize("ref,expected", [
    ("disagg-colocated.yaml:override_gpu_c4", DISAGG_COLOCATED_C4),
    ("agg-variants.yaml:override_2tp4_c2", AGG_SMG_2TP4_C2),
    ("agg-variants.yaml:override_tp8_c1", AGG_DIRECT_TP8_C1),
])
def test_vllm_commands_as_written_by_hand(policy, ref: str, expected: list[str]) -> None:
    point = Workspace(CORPUS / "inferencex").bare_recipe(str(VLLM / ref))
    deployment = render(point.recipe, point.typed, RenderContext(MODEL, policy))
    assert ["\n".join(command_lines(b)) for b in deployment.blocks] == expected


MANIFEST = """title: vLLM lanes
source: {source}
generated_on: 2026-11-29
pages:
  - model: deepseek-ai/DeepSeek-V4.1-Flash
    title: DeepSeek-V4.1-Flash
    configs:
"""


def _manifest(tmp_path: Path, *keys: str) -> Path:
    lines = [f"      - {{key: {k}, commit: e182134fd, pr: null, run: null, merged: false}}\n" for k in keys]
    path = tmp_path / "cookbook.yaml"
    path.write_text(MANIFEST.format(source=CORPUS / "inferencex") + "".join(lines), encoding="utf-8")
    return path


def test_vllm_lanes_build_and_diff_at_parity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest(tmp_path, "dsv41flash-fp4-mi325x-vllm-agentic-nixl", "dsv41flash-fp4-mi300x-vllm-agentic-dspark")
    assert main(["build", "--cookbook", str(manifest), "--out", str(tmp_path / "site"), "--no-cache"]) == 0
    assert any("vllm serve deepseek-ai/DeepSeek-V4.1-Flash" in p.read_text() for p in (tmp_path / "site").rglob("*.sh"))
    capsys.readouterr()
    assert main(["diff", "--cookbook", str(manifest), "--cookbook", str(tmp_path / "site")]) == 0
    assert "parity over 10 point(s) of 2 config(s)" in capsys.readouterr().out


def test_agentx_export_of_a_vllm_lane_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest(tmp_path, "dsv41flash-fp4-mi325x-vllm-agentic-dspark")
    assert main(["export", "--cookbook", str(manifest), "--out", str(tmp_path / "module.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot express router 'vllm'" in err[0] and not (tmp_path / "module.json").exists()
