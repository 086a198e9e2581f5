"""A v1 vLLM recipe with `backend.dp_launch_mode: per_gpu` as srtctl launches it: one `dynamo.vllm`
process per GPU of each data-parallel worker, each on its one GPU (`--device-ids`) with its own
`--data-parallel-rank`, the worker's DP address and RPC port, and the role's `--data-parallel-size`.
The six kimik2.6-fp4-b200-dynamo-vllm recipes of InferenceX 843c6254 set it (they were refused), and
srtctl before v1.0.68 defaults to it (the runners pin such refs for other vLLM recipes; test_srt_refs.py).
srtctl's own launches of all six were recorded (scripts/srtctl_reference.py) with srtctl v1.0.68 and
with c180328b (v1.0.38), the commit launch_b200-nscale-slurm.sh checks out for them; both launch the
same processes, and every role of every recipe must agree with cookbookgen's render."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from cookbookgen.cells.describe import topology_label
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.model import Deployment
from cookbookgen.render.shell import block_argv

from conftest import CORPUS
from nothing_dropped import effective, unmapped

DATA = Path(__file__).parent / "data" / "srtctl"
sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import srtctl_compare  # noqa: E402

CHECKOUT = CORPUS / "inferencex-843c6254"
FOLDER = "benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k2.6/b200-fp4/8k1k"
COMMITS = {"srtctl-v1.0.68-per-gpu.jsonl.gz": "c88ef731636890ff6385a783e152c1790e15b194",
           "srtctl-v1.0.38-per-gpu.jsonl.gz": "c180328b98c3793ca84a1e24a030f90545eb7d5d"}
GOLDENS = [(name, g) for name in COMMITS for g in srtctl_compare.load_goldens(DATA / "golden" / name)]


def _render(path: Path, *sets: str) -> Deployment:
    point = Workspace(Path(".")).bare_recipe(str(path), sets)
    return render(point.recipe, point.typed, RenderContext("nvidia/Kimi-K2.6-NVFP4", load_policy()))


def test_the_goldens_are_the_six_recipes_at_both_commits() -> None:
    for name, commit in COMMITS.items():
        recipes = sorted(g["recipe"] for n, g in GOLDENS if n == name)
        assert recipes == sorted(f"{FOLDER}/{p.name}" for p in (CHECKOUT / FOLDER).glob("*.yaml")) and len(recipes) == 6
        assert {g["srt_slurm_commit"] for n, g in GOLDENS if n == name} == {commit}


@pytest.mark.parametrize("golden", [g for _, g in GOLDENS], ids=[f"{n.split('-')[1]}-{Path(g['recipe']).stem}" for n, g in GOLDENS])
def test_every_process_agrees_with_srtctl(golden: dict) -> None:
    """Each per-GPU process (argv, env) of each role, the decode workers beside them and the frontend."""
    ranks = [p for p in golden["processes"] if "--data-parallel-rank" in p["argv"]]
    assert ranks and all(len(p["argv"][p["argv"].index("--device-ids") + 1].split(",")) == 1 for p in ranks)
    assert srtctl_compare.differences(golden, CHECKOUT) == []


def test_a_changed_rank_gpu_or_missing_process_is_a_difference() -> None:
    """Mutations of srtctl's side: the comparison is not vacuous for what per_gpu decides."""
    golden = next(g for _, g in GOLDENS if g["recipe"].endswith("disagg-b200-1p8d-dep4-tp4-c32.yaml"))
    text = json.dumps(golden)
    for old, new in (('"--data-parallel-rank", "2"', '"--data-parallel-rank", "5"'), ('"--device-ids", "3"', '"--device-ids", "7"')):
        assert old in text
        assert srtctl_compare.differences(json.loads(text.replace(old, new, 1)), CHECKOUT)
    fewer = [p for p in golden["processes"] if p["argv"][-2:] != ["--data-parallel-rank", "3"] and "--data-parallel-rank 3 " not in " ".join(p["argv"])]
    assert len(fewer) == len(golden["processes"]) - 1
    assert any(d.startswith("prefill workers") for d in srtctl_compare.differences({**golden, "processes": fewer}, CHECKOUT))


def test_the_reader_gets_one_command_per_gpu() -> None:
    """1p8d-dep4-tp4-c32: the DEP4 prefill worker is four processes on GPUs 0-3 of its node (DP ranks 0-3);
    the TP4 decode workers stay one process each. The whole argv of the process of DP rank 2."""
    path = CHECKOUT / FOLDER / "disagg-b200-1p8d-dep4-tp4-c32.yaml"
    blocks = _render(path).blocks
    prefill = [b for b in blocks if b.kind == "worker" and b.role == "prefill"]
    assert [(b.arg_values("--device-ids"), b.arg_values("--data-parallel-rank"), b.env["VLLM_PORT"]) for b in prefill] == [
        ([("--device-ids", str(i))], [("--data-parallel-rank", str(i))], str(20000 + 50 * i)) for i in range(4)]
    assert prefill[2].title == "Prefill worker · DP rank 2 of 4 (GPU 2)" and prefill[2].workers == 1
    assert block_argv(prefill[2]) == [
        "DYN_REQUEST_PLANE=tcp", "ETCD_ENDPOINTS=http://$ETCD_IP:2379", "NATS_SERVER=nats://$NATS_IP:4222",
        "NCCL_CUMEM_ENABLE=1", "NCCL_WATCHDOG_TIMEOUT=1800", "TORCH_CUDA_ARCH_LIST=10.0", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=1800",
        "UCX_CUDA_IPC_ENABLE_MNNVL=n", "UCX_MAX_RMA_RAILS=1", "UCX_MAX_RNDV_RAILS=1", "UCX_MEMTYPE_CACHE=n", "UCX_MEMTYPE_REG_WHOLE=n",
        "UCX_RNDV_SCHEME=put_zcopy", "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=900", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0",
        "VLLM_NIXL_SIDE_CHANNEL_HOST=$NODE_IP", "VLLM_NIXL_SIDE_CHANNEL_PORT=5400", "VLLM_PORT=20100", "VLLM_USE_FLASHINFER_MOE_FP4=1",
        "VLLM_USE_NCCL_SYMM_MEM=0",
        "python3", "-m", "dynamo.vllm", "--model", "nvidia/Kimi-K2.6-NVFP4", "--disaggregation-mode", "prefill", "--device-ids", "2",
        "--request-plane", "tcp", "--data-parallel-rank", "2", "--data-parallel-address", "$NODE_IP", "--data-parallel-rpc-port", "13346",
        "--kv-transfer-config", '{"kv_connector": "NixlConnector", "kv_role": "kv_both", "engine_id": "kimi-k26-prefill-dep4"}',
        "--attention-backend", "FLASHINFER_MLA", "--attention-config", '{"mla_prefill_backend": "TRTLLM_RAGGED"}', "--block-size", "128",
        "--compilation-config", '{"custom_ops":["+quant_fp8","+rms_norm","+rotary_embedding"],"pass_config":{"fuse_attn_quant":true,'
                                '"fuse_allreduce_rms":true}}',
        "--data-parallel-size", "4", "--enable-expert-parallel", "--enforce-eager", "--gpu-memory-utilization", "0.93",
        "--kv-cache-dtype", "fp8", "--max-model-len", "10240", "--max-num-batched-tokens", "8192", "--max-num-seqs", "2048",
        "--no-enable-flashinfer-autotune", "--no-enable-prefix-caching", "--pipeline-parallel-size", "1",
        "--safetensors-load-strategy", "prefetch", "--served-model-name", "nvidia/Kimi-K2.6-NVFP4", "--tensor-parallel-size", "1",
        "--trust-remote-code"]
    decode = [b for b in blocks if b.kind == "worker" and b.role == "decode"]
    assert all(not b.arg_values("--data-parallel-rank") for b in decode) and sum(b.workers or 1 for b in decode) == 8


def test_nothing_is_dropped() -> None:
    for path in sorted((CHECKOUT / FOLDER).glob("*.yaml")):
        assert unmapped(effective(path, None), _render(path)) == [], path.name


def test_a_worker_spanning_nodes_runs_its_ranks_node_by_node(tmp_path: Path) -> None:
    """dsv4-fp4-gb200-dynamo-vllm c1 (disagg-gb200-low-latency.yaml, GB200: 4 GPUs a node): the runner pins
    srt-slurm 0f31474a (v1.0.31), whose default dp_launch_mode is per_gpu (the recipe sets none; `--recipes`
    writes that default in, test_srt_refs.py). srtctl there starts the DEP8 prefill worker as 8 processes,
    ranks 0-3 on its head node and 4-7 on the next, all with the head node as DP address. The recipe with
    the pinned default written in, as `--recipes` reads it, agrees with srtctl's launch process by process."""
    [golden] = srtctl_compare.load_goldens(DATA / "golden" / "srtctl-v1.0.31-per-gpu.jsonl.gz")
    assert golden["srt_slurm_commit"] == "0f31474a9b3831af28b5f44c95913776daed9f38"
    data = yaml.safe_load((DATA / "inferencex" / golden["recipe"]).read_text())
    assert "dp_launch_mode" not in data["backend"]
    data["backend"].update(dp_launch_mode="per_gpu", set_cuda_visible_devices=False)     # v1.0.31's defaults
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert srtctl_compare.differences({**golden, "recipe": "recipe.yaml"}, tmp_path) == []
    prefill = [b for b in _render(tmp_path / "recipe.yaml").blocks if b.kind == "worker" and b.role == "prefill"]
    assert [(b.arg_values("--data-parallel-rank")[0][1], b.arg_values("--device-ids")[0][1], b.node_rank) for b in prefill] == [
        ("0", "0", 0), ("4", "0", 1), ("1", "1", 0), ("5", "1", 1), ("2", "2", 0), ("6", "2", 1), ("3", "3", 0), ("7", "3", 1)]
    assert {b.arg_values("--data-parallel-address")[0] for b in prefill} == {("--data-parallel-address", "$PREFILL_HEAD_IP")}
    assert not any(b.arg_values("--master-addr") or b.arg_values("--headless") for b in prefill)


def test_the_processes_of_one_worker_count_as_one_worker() -> None:
    """A block per DP rank (`Block.dp_rank`) is not a worker of its own: the cell label counts engines
    (1P8D: one DEP4 prefill worker of four processes, eight TP4 decode workers), as the recipe names them."""
    labels = {p.name: topology_label(_render(p)) for p in sorted((CHECKOUT / FOLDER).glob("*.yaml"))}
    assert labels == {"disagg-b200-1p1d-dep8-dep8-c2048.yaml": "Disagg 1P1D · prefill TP1·EP8 · decode TP1·EP8",
                      "disagg-b200-1p1d-dep8-tp8-c1.yaml": "Disagg 1P1D · prefill TP1·EP8 · decode TP8",
                      "disagg-b200-1p4d-dep4-tp4-c512.yaml": "Disagg 1P4D · prefill TP1·EP4 · decode TP4",
                      "disagg-b200-1p8d-dep4-tp4-c128.yaml": "Disagg 1P8D · prefill TP1·EP4 · decode TP4",
                      "disagg-b200-1p8d-dep4-tp4-c32.yaml": "Disagg 1P8D · prefill TP1·EP4 · decode TP4",
                      "disagg-b200-2p1d-dep8-dep8-c8192.yaml": "Disagg 2P1D · prefill TP1·EP8 · decode TP1·EP8"}
    blocks = _render(CHECKOUT / FOLDER / "disagg-b200-2p1d-dep8-dep8-c8192.yaml").blocks
    assert [b.dp_rank for b in blocks if b.role == "prefill"] == list(range(8))
    assert all(b.workers == 2 for b in blocks if b.role == "prefill")      # each rank's block stands for both prefill workers
