"""vLLM recipes of the corpus rendered whole: the commands below are written by hand from reading the
recipes (dsv41flash/vllm/mi325x-fp4/agentx/*.yaml), not copied from the tool's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from cookbookgen.cli import main
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.shell import command_lines, format_block

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


def test_vllm_and_trtllm_lanes_build_and_diff_at_parity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest(tmp_path, "dsv41flash-fp4-mi325x-vllm-agentic-nixl", "dsv41flash-fp4-mi300x-vllm-agentic-dspark",
                         "qwen3.5-fp4-gb300-dynamo-trt-agentic-disagg")
    assert main(["build", "--cookbook", str(manifest), "--out", str(tmp_path / "site"), "--no-cache"]) == 0
    scripts = "".join(p.read_text() for p in (tmp_path / "site").rglob("*.sh"))
    assert "vllm serve deepseek-ai/DeepSeek-V4.1-Flash" in scripts and "cat > trtllm_config_decode.yaml <<" in scripts
    capsys.readouterr()
    assert main(["diff", "--cookbook", str(manifest), "--cookbook", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cookbookgen diff: PASS (exit 0): parity; compared ") and "  points    32 paired and compared" in out, out[:600]   # 16 points, in the manifest and in its site


@pytest.mark.parametrize("key,router", [("dsv41flash-fp4-mi325x-vllm-agentic-dspark", "vllm"),
                                        ("qwen3.5-fp4-gb300-dynamo-trt-agentic-disagg", "dynamo-trtllm")])
def test_agentx_export_of_another_engine_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, router: str) -> None:
    manifest = _manifest(tmp_path, key)
    assert main(["export", "--cookbook", str(manifest), "--out", str(tmp_path / "module.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cookbookgen: error: config {key}: its cells run behind router {router!r}, ")
    assert "name the SGLang configs to export with --config KEY" in err[0] and not (tmp_path / "module.json").exists()


TRTLLM = CORPUS / "inferencex/inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/qwen3.5/trtllm/gb300-fp4/agentx"
QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4-V2"
INSTALL = """git clone -- https://github.com/cquil11/dynamo.git dynamo && git -C dynamo checkout 2cbbdc863c336c2cfffa2a3668e2a6661801b259
pip install maturin && (cd dynamo/lib/bindings/python && maturin build --release --out ../../../dist)
pip install dynamo/dist/*.whl ./dynamo
"""

TRTLLM_FRONTEND = INSTALL + """DYN_TOKENIZER=fastokens \\
DYN_TOKENIZER_CACHE=1 \\
DYN_TOKENIZER_CACHE_BYTES=8000000000 \\
ETCD_ENDPOINTS="http://$ETCD_IP:2379" \\
ETCD_LEASE_TTL=120 \\
NATS_SERVER="nats://$NATS_IP:4222" \\
python3 -m dynamo.frontend \\
  --http-port 8000 \\
  --router-mode kv \\
  --router-session-affinity-ttl-secs 14400 \\
  --active-decode-blocks-threshold None \\
  --active-prefill-tokens-threshold None \\
  --active-prefill-tokens-threshold-frac None"""

# base prefill args + override_1p1d_dep1_tep2_c44_b8 (ep 1, tp 1); keys sorted as yaml.safe_dump writes
# them; the base's `cuda_graph_config:` (null) stays null.
PREFILL_YAML = """attention_dp_config:
  kv_cache_routing_conversation_affinity: true
cache_transceiver_config:
  backend: NIXL
  kv_transfer_sender_future_timeout_ms: 20
  kv_transfer_timeout_ms: 600000
  transceiver_runtime: PYTHON
cuda_graph_config: null
disable_overlap_scheduler: false
enable_attention_dp: true
enable_chunked_prefill: true
enable_iter_perf_stats: true
enable_iter_req_stats: false
kv_cache_config:
  block_reuse_config:
    max_num_turns: 3
    policy: per_conversation
  dtype: fp8
  enable_block_reuse: true
  event_buffer_max_size: 0
  free_gpu_memory_fraction: 0.8
  host_cache_size: 137438953472
  mamba_state_config:
    additional_snapshot_offsets_from_end:
    - 2
    periodic_snapshot_interval: 0
  pool_ratio:
  - 0.8
  - 0.2
  tokens_per_block: 64
  use_kv_cache_manager_v2: true
max_batch_size: 64
max_num_tokens: 8192
max_seq_len: 262144
moe_config:
  backend: CUTEDSL
moe_expert_parallel_size: 1
num_serve_frontends: 8
nvfp4_gemm_config:
  allowed_backends:
  - cutlass
  - cublaslt
  - cutedsl
  - cuda_core
pipeline_parallel_size: 1
print_iter_log: true
return_perf_metrics: false
scheduler_config:
  capacity_scheduler_policy: MAX_UTILIZATION
tensor_parallel_size: 1
torch_compile_config:
  capture_num_tokens:
  - 1
  - 2
  - 4
  - 8
  - 16
  - 32
  - 64
  - 128
  - 256
  - 512
  - 1024
  - 2048
  - 4096
  - 8192
  enable_fullgraph: true
  enable_piecewise_cuda_graph: true
trust_remote_code: true
"""

# base decode args + the override's (cuda graph batch sizes merged beside enable_padding, batch 8,
# 56 tokens, ep 2, tp 2).
DECODE_YAML = """cache_transceiver_config:
  backend: NIXL
  kv_transfer_sender_future_timeout_ms: 20
  kv_transfer_timeout_ms: 600000
  transceiver_runtime: PYTHON
cuda_graph_config:
  batch_sizes:
  - 1
  - 2
  - 4
  - 8
  enable_padding: true
enable_attention_dp: false
enable_iter_perf_stats: true
enable_iter_req_stats: false
enable_lm_head_tp_in_adp: false
kv_cache_config:
  avg_seq_len: 102150
  dtype: fp8
  enable_block_reuse: false
  event_buffer_max_size: 0
  free_gpu_memory_fraction: 0.85
  host_cache_size: 137438953472
  tokens_per_block: 64
  use_kv_cache_manager_v2: true
max_batch_size: 8
max_num_tokens: 56
max_seq_len: 262148
moe_config:
  backend: CUTEDSL
  use_low_precision_moe_combine: true
moe_expert_parallel_size: 2
num_postprocess_workers: 4
num_serve_frontends: 4
nvfp4_gemm_config:
  allowed_backends:
  - cutlass
  - cublaslt
  - cutedsl
  - cuda_core
pipeline_parallel_size: 1
print_iter_log: true
return_perf_metrics: false
scheduler_config:
  capacity_scheduler_policy: GUARANTEED_NO_EVICT
speculative_config:
  decoding_type: MTP
  max_draft_len: 6
stream_interval: 20
tensor_parallel_size: 2
trust_remote_code: true
"""

# TLLM_LOG_LEVEL is harness-only (a log level); every other role env entry is published.
TRTLLM_PREFILL = ("cat > trtllm_config_prefill.yaml <<'COOKBOOK_EOF'\n" + PREFILL_YAML + "COOKBOOK_EOF\n" + INSTALL + """CUDA_SCALE_LAUNCH_QUEUES=4x \\
DYN_ENGINE_CONV_AFFINITY=1 \\
DYN_SYSTEM_PORT=7500 \\
DYN_TRTLLM_SERVED_MODEL_NAME=nvidia/Qwen3.5-397B-A17B-NVFP4-V2 \\
ETCD_ENDPOINTS="http://$ETCD_IP:2379" \\
MIMALLOC_ARENA_RESERVE=0 \\
MIMALLOC_PURGE_DELAY='' \\
NATS_SERVER="nats://$NATS_IP:4222" \\
NCCL_GRAPH_MIXING_SUPPORT=0 \\
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \\
TRTLLM_ENABLE_PDL=1 \\
TRTLLM_PINNED_WEIGHT_STAGING=1 \\
TRTLLM_SERVER_DISABLE_GC=1 \\
TRTLLM_WORKER_DISABLE_GC=1 \\
TRT_LLM_DISABLE_LOAD_WEIGHTS_IN_PARALLEL=1 \\
UCX_TLS=cuda_ipc,cuda_copy,sm,self,tcp \\
trtllm-llmapi-launch python3 -m dynamo.trtllm \\
  --model-path nvidia/Qwen3.5-397B-A17B-NVFP4-V2 \\
  --served-model-name nvidia/Qwen3.5-397B-A17B-NVFP4-V2 \\
  --disaggregation-mode prefill \\
  --extra-engine-args trtllm_config_prefill.yaml""")

TRTLLM_DECODE = ("cat > trtllm_config_decode.yaml <<'COOKBOOK_EOF'\n" + DECODE_YAML + "COOKBOOK_EOF\n" + INSTALL + """DYN_ENGINE_CONV_AFFINITY=1 \\
DYN_SYSTEM_PORT=7500 \\
DYN_TRTLLM_SERVED_MODEL_NAME=nvidia/Qwen3.5-397B-A17B-NVFP4-V2 \\
ETCD_ENDPOINTS="http://$ETCD_IP:2379" \\
MIMALLOC_ARENA_RESERVE=0 \\
MIMALLOC_PURGE_DELAY='' \\
NATS_SERVER="nats://$NATS_IP:4222" \\
NCCL_GRAPH_MIXING_SUPPORT=0 \\
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \\
TRTLLM_ENABLE_PDL=1 \\
TRTLLM_PINNED_WEIGHT_STAGING=1 \\
TRTLLM_SERVER_DISABLE_GC=1 \\
TRTLLM_WORKER_DISABLE_GC=1 \\
TRT_LLM_DISABLE_LOAD_WEIGHTS_IN_PARALLEL=1 \\
UCX_TLS=cuda_ipc,cuda_copy,sm,self,tcp \\
trtllm-llmapi-launch python3 -m dynamo.trtllm \\
  --model-path nvidia/Qwen3.5-397B-A17B-NVFP4-V2 \\
  --served-model-name nvidia/Qwen3.5-397B-A17B-NVFP4-V2 \\
  --disaggregation-mode decode \\
  --extra-engine-args trtllm_config_decode.yaml""")


def test_trtllm_disagg_commands_and_options_files_as_written_by_hand(policy) -> None:
    point = Workspace(CORPUS / "inferencex").bare_recipe(f"{TRTLLM / 'disagg-variants.yaml'}:override_1p1d_dep1_tep2_c44_b8")
    deployment = render(point.recipe, point.typed, RenderContext(QWEN, policy))
    assert [b.kind for b in deployment.blocks] == ["etcd", "nats", "dynamo-frontend", "worker", "worker"]
    assert [format_block(b) for b in deployment.blocks[2:]] == [TRTLLM_FRONTEND, TRTLLM_PREFILL, TRTLLM_DECODE]
    assert deployment.blocks[3].to_json()["files"] == {"trtllm_config_prefill.yaml": PREFILL_YAML}


@pytest.mark.parametrize("key,value", [("git", "--upload-pack=touch /tmp/pwned"), ("rev", "--orphan=x")])
def test_a_dynamo_source_word_that_git_would_take_as_an_option_is_refused(capsys, tmp_path: Path, key: str, value: str) -> None:
    text = (TRTLLM / "disagg-variants.yaml").read_text()
    line = {"git": "      git: https://github.com/cquil11/dynamo.git\n", "rev": "      rev: 2cbbdc863c336c2cfffa2a3668e2a6661801b259\n"}[key]
    assert text.count(line) == 1
    path = tmp_path / "disagg-variants.yaml"
    path.write_text(text.replace(line, f"      {key}: '{value}'\n"))
    code = main(["render", "--recipe", f"{path}:override_1p1d_dep1_tep2_c44_b8", "--model", QWEN])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}:{15 if key == 'git' else 16}: dynamo.source.{key}: must not start with '-' (git would take it as an option)" in err
