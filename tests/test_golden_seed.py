"""Golden test: the six points of seed 000 (PR 4180, GB300 DeepSeek-V4.1-Flash Dynamo + SGLang).

The expected flags and env below are transcribed by hand from the seed's "Additional detail"
section (Frontend, Agg workers, Disagg prefill, Disagg decode, Result, Excluded as InferenceX-only),
independently of the bundled recipes. The only additions are the synthesized settings the seed's
comparison calls placeholders (model path, host, ports, node rank, request plane, Dynamo endpoints).
"""

from __future__ import annotations

import pytest

from cookbookgen.render.model import Block
from cookbookgen.render.shell import format_block

AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"
DISAGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg"
MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"

FRONTEND_ARGS = [
    ("--router-mode", "kv"), ("--router-session-affinity-ttl-secs", "14400"),
    ("--active-decode-blocks-threshold", "None"), ("--active-prefill-tokens-threshold", "None"),
    ("--active-prefill-tokens-threshold-frac", "None"),
]
FRONTEND_ENV = {
    "DYN_TOKENIZER": "fastokens", "DYN_TOKENIZER_CACHE": "1", "DYN_TOKENIZER_CACHE_BYTES": "8000000000",
    "DYN_ROUTER_TEMPERATURE": "0", "DYN_ROUTER_QUEUE_THRESHOLD": "None", "DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS": "3600",
    "DYN_TCP_CHANNEL_BUFFER": "128", "DYN_TCP_REQUEST_TIMEOUT": "60", "DYN_REQUEST_PLANE": "tcp",
}
DYNAMO_ENDPOINTS = {"ETCD_ENDPOINTS": "http://$ETCD_IP:2379", "NATS_SERVER": "nats://$NATS_IP:4222"}
SYNTH_WORKER = [("--model-path", MODEL), ("--served-model-name", MODEL), ("--host", "0.0.0.0"), ("--request-plane", "tcp")]

AGG_SHARED = [("--trust-remote-code",), ("--mem-fraction-static", "0.8"), ("--chunked-prefill-size", "16384"),
              ("--speculative-algorithm", "DSPARK"), ("--speculative-dspark-block-size", "5"),
              ("--reasoning-parser", "auto"), ("--tool-call-parser", "auto"), ("--watchdog-timeout", "3600")]
ENGRAM = {"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1", "SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT": "per_rank"}
AGG_POINTS = {
    "tp4/c1": ([("--tensor-parallel-size", "4"), ("--expert-parallel-size", "1"), ("--max-running-requests", "1"),
                ("--cuda-graph-max-bs-decode", "64"), ("--prefill-decode-interval", "0"),
                ("--enable-decoder-swa-bounded-replay",), ("--cuda-graph-backend-prefill", "disabled")], {}),
    "tp4/c4": ([("--tensor-parallel-size", "4"), ("--expert-parallel-size", "1"), ("--max-running-requests", "128"),
                ("--cuda-graph-max-bs-decode", "128"), ("--swa-prefix-tails", "4096"), ("--prefill-decode-interval", "0")], ENGRAM),
    "tp4/c16": ([("--tensor-parallel-size", "4"), ("--expert-parallel-size", "1"), ("--max-running-requests", "128"),
                 ("--cuda-graph-max-bs-decode", "128"), ("--swa-prefix-tails", "4096"), ("--prefill-decode-interval", "192")],
                {**ENGRAM, "SGLANG_NUMA_BIND_V2": "0"}),
    "tp2-ep2/c16": ([("--tensor-parallel-size", "2"), ("--expert-parallel-size", "2"), ("--max-running-requests", "32"),
                     ("--cuda-graph-max-bs-decode", "64"), ("--prefill-decode-interval", "96"), ("--swa-prefix-tails", "1024"),
                     ("--enable-decoder-swa-bounded-replay",), ("--cuda-graph-backend-prefill", "disabled")],
                    {**ENGRAM, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "SGLANG_NUMA_BIND_V2": "0"}),
}

DISAGG_SHARED = [("--enable-dp-attention",), ("--enable-dp-lm-head",), ("--moe-a2a-backend", "megamoe"),
                 ("--dsv4-attn-backend", "flashmla"), ("--disaggregation-transfer-backend", "mooncake"),
                 ("--mem-fraction-static", "0.85"), ("--weight-loader-prefetch-checkpoints",),
                 ("--model-loader-extra-config", '{"enable_multithread_load":true}'),
                 ("--speculative-algorithm", "DSPARK"), ("--speculative-dspark-block-size", "5"),
                 ("--reasoning-parser", "auto"), ("--tool-call-parser", "auto")]
PREFILL = [("--disaggregation-mode", "prefill"), ("--tensor-parallel-size", "2"), ("--data-parallel-size", "2"),
           ("--expert-parallel-size", "2"), ("--chunked-prefill-size", "65536"), ("--max-running-requests", "128"),
           ("--swa-prefix-tails", "2048"), ("--enable-decoder-swa-bounded-replay",), ("--enable-hierarchical-cache",),
           ("--hicache-write-policy", "write_back"), ("--hicache-io-backend", "direct"),
           ("--hicache-mem-layout", "page_first_direct")]
PREFILL_ENV = {**ENGRAM, "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "3600", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "3600",
               "SGLANG_ENABLE_PREFILL_WAR_READ_DONE": "1", "SGLANG_MOONCAKE_CUSTOM_MEM_POOL": "True",
               "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK": "32768", "SGLANG_OPT_DSV41_MEGA_MHC_PREFILL": "1",
               "NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1", "MC_FORCE_MNNVL": "1"}
DECODE = [("--disaggregation-mode", "decode"), ("--nnodes", "4"), ("--tensor-parallel-size", "16"),
          ("--data-parallel-size", "16"), ("--expert-parallel-size", "16")]
DECODE_ENV = {**ENGRAM, "DYN_SGL_GATEWAY_WORKERS": "8", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "3600",
              "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "3600", "SGLANG_NCCL_ALL_GATHER_IN_OVERLAP_SCHEDULER_SYNC_BATCH": "1",
              "SGLANG_MOONCAKE_CUSTOM_MEM_POOL": "True", "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK": "16384",
              "NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1", "MC_FORCE_MNNVL": "1"}
DISAGG_POINTS = {
    "c1228": ("1.02", 4, ("384", "24", "36")),
    "c2884": ("1.1", 6, ("640", "40", "80")),
}
EXCLUDED_HARNESS = ["enable-metrics", "PYTHONUNBUFFERED", "PYTHONNOUSERSITE", "HF_HUB_CACHE", "SGLANG_SIMULATE_ACC_LEN",
                    "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE", "observability", "health_check",
                    "slurm", "sbatch_directives", "srun_options", "AIPERF_EXTRA_INPUTS", "placement"]


def _blocks(rendered, kind: str, role: str | None = None) -> list[Block]:
    return [b for b in rendered.deployment.blocks if b.kind == kind and (role is None or b.role == role)]


def _check_frontend(rendered) -> None:
    (fe,) = _blocks(rendered, "dynamo-frontend")
    assert fe.cmd == "python3 -m dynamo.frontend"
    assert list(fe.args) == [("--http-port", "8000"), *FRONTEND_ARGS]
    assert fe.env == dict(sorted({**FRONTEND_ENV, **DYNAMO_ENDPOINTS}.items()))
    assert [b.kind for b in rendered.deployment.blocks[:2]] == ["etcd", "nats"]


@pytest.mark.parametrize("point", list(AGG_POINTS))
def test_agg_point_matches_seed(render_bundled, point: str) -> None:
    rendered = render_bundled(AGG, point)
    _check_frontend(rendered)
    (worker,) = _blocks(rendered, "worker", "agg")
    own_args, own_env = AGG_POINTS[point]
    expected = {*SYNTH_WORKER, ("--port", "30000"), *AGG_SHARED, *own_args}
    assert set(worker.args) == expected and len(worker.args) == len(expected)
    assert worker.cmd == "python3 -m dynamo.sglang"
    # NCCL_CUMEM_ENABLE=1 is cluster-provided on agg (the seed's "Result" bullet).
    assert worker.env == {**own_env, **DYNAMO_ENDPOINTS, "DYN_REQUEST_PLANE": "tcp", "NCCL_CUMEM_ENABLE": "1"}
    assert (worker.workers, worker.nodes_per_worker, worker.gpu_pinning) == (1, 1, None)


@pytest.mark.parametrize("point", list(DISAGG_POINTS))
def test_disagg_point_matches_seed(render_bundled, point: str) -> None:
    ratio, prefill_workers, (mrr, bs, slots) = DISAGG_POINTS[point]
    rendered = render_bundled(DISAGG, point)
    _check_frontend(rendered)
    prefill = _blocks(rendered, "worker", "prefill")
    assert [b.gpu_pinning for b in prefill] == [(("0,1",),), (("2,3",),)]
    assert sum(b.workers or 0 for b in prefill) == prefill_workers
    for slot, block in enumerate(prefill):
        synth = {*SYNTH_WORKER, ("--port", str(30000 + 32 * slot)),
                 ("--kv-events-config", '{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:%d"}' % (5557 + 2 * slot))}
        if slot:
            synth.add(("--disaggregation-bootstrap-port", str(8998 + slot)))
        expected = {*synth, *DISAGG_SHARED, *PREFILL, ("--hicache-ratio", ratio)}
        assert set(block.args) == expected and len(block.args) == len(expected)
        pins = "0,1" if slot == 0 else "2,3"
        assert block.env == {**PREFILL_ENV, **DYNAMO_ENDPOINTS, "DYN_REQUEST_PLANE": "tcp", "CUDA_VISIBLE_DEVICES": pins}
    (decode,) = _blocks(rendered, "worker", "decode")
    expected = {*SYNTH_WORKER, ("--port", "30000"), ("--dist-init-addr", "$DECODE_HEAD_IP:20000"), ("--node-rank", "$NODE_RANK"),
                *DISAGG_SHARED, *DECODE, ("--max-running-requests", mrr), ("--cuda-graph-max-bs-decode", bs),
                ("--disaggregation-decode-extra-slots", slots)}
    assert set(decode.args) == expected and len(decode.args) == len(expected)
    assert decode.env == {**DECODE_ENV, **DYNAMO_ENDPOINTS, "DYN_REQUEST_PLANE": "tcp"}
    assert (decode.workers, decode.nodes_per_worker) == (1, 4)


@pytest.mark.parametrize("key,point", [(AGG, p) for p in AGG_POINTS] + [(DISAGG, p) for p in DISAGG_POINTS])
def test_exclusions_match_seed(render_bundled, key: str, point: str) -> None:
    settings = render_bundled(key, point).deployment.settings
    by_class: dict[str, list[str]] = {}
    for s in settings:
        by_class.setdefault(s.cls, []).append(s.path)
    harness = " ".join(by_class["harness-only"])
    for name in EXCLUDED_HARNESS:
        assert name in harness, name
    metrics = [s for s in settings if s.path.endswith("args.enable-metrics")]
    assert metrics and all(s.cls == "harness-only" and "Prometheus" in s.reason and "AIPerf" in s.reason for s in metrics)
    drop = [s for s in settings if s.path.endswith("args.weight-loader-drop-cache-after-load")]
    assert drop and all(s.cls == "default-equivalent" and "default" in s.reason for s in drop)
    acc = [s for s in settings if "SGLANG_SIMULATE_ACC_LEN" in s.path]
    assert acc and all(s.value == "3.51" and "golden acceptance length" in s.reason for s in acc)
    assert "unclassified" not in by_class
    cluster = [s.path for s in settings if s.cls == "cluster-provided"]
    assert cluster == (["roles.agg.env.NCCL_CUMEM_ENABLE"] if key == AGG else [])


def test_whole_agg_tp4_c1_worker_command(render_bundled) -> None:
    """The full text of one command, as a reader copies it (lead flags, then alphabetical)."""
    (worker,) = _blocks(render_bundled(AGG, "tp4/c1"), "worker")
    assert format_block(worker) == "\n".join([
        "DYN_REQUEST_PLANE=tcp \\",
        'ETCD_ENDPOINTS="http://$ETCD_IP:2379" \\',
        'NATS_SERVER="nats://$NATS_IP:4222" \\',
        "NCCL_CUMEM_ENABLE=1 \\",
        "python3 -m dynamo.sglang \\",
        "  --model-path deepseek-ai/DeepSeek-V4.1-Flash \\",
        "  --served-model-name deepseek-ai/DeepSeek-V4.1-Flash \\",
        "  --host 0.0.0.0 \\",
        "  --port 30000 \\",
        "  --request-plane tcp \\",
        "  --chunked-prefill-size 16384 \\",
        "  --cuda-graph-backend-prefill disabled \\",
        "  --cuda-graph-max-bs-decode 64 \\",
        "  --enable-decoder-swa-bounded-replay \\",
        "  --expert-parallel-size 1 \\",
        "  --max-running-requests 1 \\",
        "  --mem-fraction-static 0.8 \\",
        "  --prefill-decode-interval 0 \\",
        "  --reasoning-parser auto \\",
        "  --speculative-algorithm DSPARK \\",
        "  --speculative-dspark-block-size 5 \\",
        "  --tensor-parallel-size 4 \\",
        "  --tool-call-parser auto \\",
        "  --trust-remote-code \\",
        "  --watchdog-timeout 3600",
    ])


def test_whole_frontend_command(render_bundled) -> None:
    (fe,) = _blocks(render_bundled(DISAGG, "c1228"), "dynamo-frontend")
    assert format_block(fe) == "\n".join([
        "DYN_REQUEST_PLANE=tcp \\", "DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS=3600 \\", "DYN_ROUTER_QUEUE_THRESHOLD=None \\",
        "DYN_ROUTER_TEMPERATURE=0 \\", "DYN_TCP_CHANNEL_BUFFER=128 \\", "DYN_TCP_REQUEST_TIMEOUT=60 \\",
        "DYN_TOKENIZER=fastokens \\", "DYN_TOKENIZER_CACHE=1 \\", "DYN_TOKENIZER_CACHE_BYTES=8000000000 \\",
        'ETCD_ENDPOINTS="http://$ETCD_IP:2379" \\', 'NATS_SERVER="nats://$NATS_IP:4222" \\',
        "python3 -m dynamo.frontend \\", "  --http-port 8000 \\", "  --router-mode kv \\",
        "  --router-session-affinity-ttl-secs 14400 \\", "  --active-decode-blocks-threshold None \\",
        "  --active-prefill-tokens-threshold None \\", "  --active-prefill-tokens-threshold-frac None",
    ])


def test_disagg_gpu_and_node_counts(render_bundled) -> None:
    """Seed: 24 GPUs at 4P1D and 28 at 6P1D; prefill workers two per node."""
    assert render_bundled(DISAGG, "c1228").deployment.gpus == 24
    assert render_bundled(DISAGG, "c2884").deployment.gpus == 28
    assert render_bundled(DISAGG, "c1228").deployment.nodes == 6
    assert render_bundled(DISAGG, "c2884").deployment.nodes == 7


def test_disagg_points_add_the_dedicated_cpu_node(render_bundled) -> None:
    """Seed: 7 nodes at c1228 and 8 at c2884, counting the CPU node of the frontend, etcd and NATS."""
    for point, total in (("c1228", 7), ("c2884", 8)):
        d = render_bundled(DISAGG, point).deployment
        assert (d.cpu_nodes, d.nodes + d.cpu_nodes) == (1, total)


def test_colocated_dp_attention_workers_reserve_disjoint_ports(render_bundled) -> None:
    """Seed: two DEP2 prefill workers share a node. With DP attention SGLang binds TCP ports from
    --port + 233 to --port + 239 (PortArgs.init_new) and ZMQ sockets within --port + 31; at ports
    30000 and 30001 those ranges overlapped, so the second worker of each node failed to start
    ("Port is already in use"). srtctl steps co-located workers' ports by 32 (SGLANG_HTTP_PORT_STRIDE)."""
    for point in DISAGG_POINTS:
        prefill = _blocks(render_bundled(DISAGG, point), "worker", "prefill")
        ports = [int(dict((a[0], a[1:]) for a in b.args)["--port"][0]) for b in prefill]
        taken = [set(range(p, p + 32)) | set(range(p + 233, p + 240)) for p in ports]
        assert len(taken) == 2 and not taken[0] & taken[1], ports
