"""InferenceX single-node benchmark scripts as points: run in the sandbox, their launches rendered like
any recipe. The golden values below were worked out by hand from the scripts' bash (clamps, `case`
branches, conditional flags), not taken from the tool's output."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cookbookgen.pipeline import render_config_point
from cookbookgen.recipes import script
from cookbookgen.recipes.workspace import Workspace
from test_bad_input import one_problem, run_cli

from conftest import CORPUS

INFERENCEX = CORPUS / "inferencex"
SCRIPTS = ("dsv41flash-fp4-gb200-sglang-agentic-dspark", "dsv41flash-fp4-h200-sglang-agentic-dspark",
           "dsv41flash-fp4-h100-sglang-agentic-dspark")
HOSTILE = Path(__file__).parent / "data" / "scripts"
MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"
# What every DSpark script exports for the engine (the thinking-on regime, host Engram tables, keep-alive).
ENGINE_ENV = {"SGLANG_DEFAULT_THINKING": "1", "SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT": "per_rank",
              "SGLANG_DSV41_REASONING_EFFORT": "high", "SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1",
              "SGLANG_TIMEOUT_KEEP_ALIVE": "900"}


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace(INFERENCEX)


def _points() -> list[tuple[str, str]]:
    entries = Workspace(INFERENCEX).entries()
    return [(key, point) for key in SCRIPTS for point in entries[key].point_ids()]


@pytest.mark.parametrize("key,point", _points())
def test_every_script_point_renders_to_valid_bash_with_every_setting_classified(capsys, tmp_path: Path, key: str, point: str) -> None:
    code, out, err = run_cli(capsys, ["render", "--source", str(INFERENCEX), "--config", key, "--point", point, "--format", "sh"])
    assert code == 0, err
    (tmp_path / "launch.sh").write_text(out)
    assert subprocess.run(["bash", "-n", str(tmp_path / "launch.sh")], capture_output=True).returncode == 0
    code, out, err = run_cli(capsys, ["render", "--source", str(INFERENCEX), "--config", key, "--point", point, "--format", "json"])
    settings = json.loads(out)["settings"]
    assert code == 0 and settings and not [s for s in settings if s["class"] == "unclassified"]


def _worker(ws: Workspace, policy, key: str, point: str) -> dict[str, tuple[str, ...]]:
    (worker,) = [b for b in render_config_point(ws, policy, key, point).deployment.blocks if b.kind == "worker"]
    assert worker.cmd == "python3 -m sglang.launch_server"
    return {a[0]: a[1:] for a in worker.args}


def test_gb200_c16_worker_command(ws: Workspace, policy) -> None:
    """TP4/EP4, CONC 16: 2*16 = 32 running requests (under the graph batch 64), 64*16 = 1024 SWA
    tails (at the cap), and the C16-only --prefill-decode-interval 16; DSpark from SPEC_DECODING=mtp."""
    deployment = render_config_point(ws, policy, SCRIPTS[0], "tp4-ep4/c16").deployment
    (worker,) = deployment.blocks
    assert worker.args == (
        ("--model-path", MODEL), ("--served-model-name", MODEL), ("--host", "0.0.0.0"), ("--port", "30000"),
        ("--chunked-prefill-size", "4096"), ("--cuda-graph-max-bs-decode", "64"), ("--ep-size", "4"),
        ("--max-running-requests", "32"), ("--mem-fraction-static", "0.70"), ("--prefill-decode-interval", "16"),
        ("--reasoning-parser", "auto"), ("--speculative-algorithm", "DSPARK"), ("--speculative-dspark-block-size", "5"),
        ("--swa-prefix-tails", "1024"), ("--tool-call-parser", "auto"), ("--tp", "4"), ("--trust-remote-code",),
        ("--watchdog-timeout", "3600"))
    assert worker.env == ENGINE_ENV
    assert deployment.gpus == 4 and deployment.nodes == 1 and deployment.image == "lmsysorg/sglang:dev-dsv41"


# (config, point, flags with the values the script computes, flags it must not pass)
GOLDEN = [
    # GB200: MAX_RUNNING_REQUESTS = 2*CONC clamped to 64; SWA tails 64*CONC capped at 1024.
    (SCRIPTS[0], "tp4-ep4/c1", {"--max-running-requests": ("2",), "--swa-prefix-tails": ("64",)}, ["--prefill-decode-interval"]),
    (SCRIPTS[0], "tp4-ep4/c32", {"--max-running-requests": ("64",), "--swa-prefix-tails": ("1024",)}, ["--prefill-decode-interval"]),
    (SCRIPTS[0], "tp4-ep4/c128", {"--max-running-requests": ("64",), "--swa-prefix-tails": ("1024",)}, ["--prefill-decode-interval"]),
    # H200: Marlin MoE unless TP8 with EP != 1; chunk 2048 only for the TP8/EP1 C64 probe; no DP attention.
    (SCRIPTS[1], "tp4/c8", {"--max-running-requests": ("16",), "--chunked-prefill-size": ("4096",), "--moe-runner-backend": ("marlin",),
                                "--attention-backend": ("dsv4",), "--swa-prefix-tails": ("1024",), "--prefill-decode-interval": ("16",)},
     ["--enable-dp-attention", "--dp-size"]),
    (SCRIPTS[1], "tp8/c32", {"--max-running-requests": ("64",), "--chunked-prefill-size": ("4096",), "--tp": ("8",)}, []),
    (SCRIPTS[1], "tp8/c64", {"--max-running-requests": ("64",), "--chunked-prefill-size": ("2048",), "--moe-runner-backend": ("marlin",)}, []),
    (SCRIPTS[1], "tp4/c64", {"--max-running-requests": ("64",), "--chunked-prefill-size": ("4096",)}, []),
    # H100: graph batch = 2*CONC raised to 64 (capped at 128); SWA tails 32*CONC from C4, else 8*CONC.
    (SCRIPTS[2], "tp8-ep8/c1", {"--max-running-requests": ("2",), "--cuda-graph-max-bs-decode": ("64",), "--swa-prefix-tails": ("8",),
                                "--mem-fraction-static": ("0.7",), "--moe-runner-backend": ("marlin",), "--prefill-decode-interval": ("16",)}, []),
    (SCRIPTS[2], "tp8-ep8/c2", {"--max-running-requests": ("4",), "--swa-prefix-tails": ("16",)}, []),
    (SCRIPTS[2], "tp8-ep8/c4", {"--max-running-requests": ("8",), "--swa-prefix-tails": ("128",)}, []),
    (SCRIPTS[2], "tp8-ep8/c8", {"--max-running-requests": ("16",), "--swa-prefix-tails": ("256",), "--ep-size": ("8",)}, []),
]


@pytest.mark.parametrize("key,point,flags,absent", GOLDEN, ids=[f"{k.split('-')[2]}-{p}" for k, p, _, _ in GOLDEN])
def test_script_logic_reaches_the_command(ws: Workspace, policy, key: str, point: str, flags: dict[str, tuple[str, ...]], absent: list[str]) -> None:
    args = _worker(ws, policy, key, point)
    assert {flag: args.get(flag) for flag in flags} == flags
    assert not [flag for flag in absent if flag in args]
    assert args["--model-path"] == (MODEL,) and args["--port"] == ("30000",) and "--enable-metrics" not in args


def test_h100_publishes_its_allocator_setting(ws: Workspace, policy) -> None:
    (worker,) = render_config_point(ws, policy, SCRIPTS[2], "c8").deployment.blocks
    assert worker.env == {**ENGINE_ENV, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


def test_harness_settings_are_dropped_with_reasons(ws: Workspace, policy) -> None:
    """Benchmark-client env, synthetic acceptance, the weights' download path and the kernel-config
    install step: each in the report with its class, none in the command."""
    settings = {s.path: s for s in render_config_point(ws, policy, SCRIPTS[1], "tp8/c64").deployment.settings}
    for path in ("roles.agg.env.AIPERF_SERVER_URL", "roles.agg.env.SGLANG_SIMULATE_ACC_LEN", "roles.agg.env.MODEL_PATH",
                 "roles.agg.env.GPU_COUNT", "roles.agg.env.AGENTIC_WARMUP_GRACE_PERIOD", "roles.agg.args.enable-metrics", "script.setup"):
        assert settings[path].cls == "harness-only" and settings[path].reason, path
    assert settings["script.setup"].value == ["install_h200_block32_configs.py kernel_configs/h200_dsv41_block32 results 8"]
    assert settings["roles.agg.args.port"].cls == "placeholder" and settings["roles.agg.args.port"].value == "8888"


def _with_dp_row(tmp_path: Path) -> Path:
    """The root-layout corpus with a DP-attention row added to the H200 SGLang entry."""
    root = tmp_path / "inferencex"
    for part in ("configs", "benchmarks"):
        shutil.copytree(INFERENCEX / part, root / part)
    master = root / "configs" / "nvidia-master.excerpt.yaml"
    row = "      - { tp: 8, ep: 1, kv-offloading: none, spec-decoding: mtp, conc-list: [1, 2, 4, 8, 16, 32, 64, 128] }\n"
    text = master.read_text()
    assert text.endswith(row)
    master.write_text(text + "      - { tp: 8, ep: 1, dp-attn: true, kv-offloading: none, spec-decoding: mtp, conc-list: [2, 64] }\n")
    return root


def test_dp_attention_starts_the_router_in_front_of_the_worker(tmp_path: Path, policy) -> None:
    """DP_ATTENTION=true: --enable-dp-attention --dp-size 8 --enable-dp-lm-head, at least TP (8) running
    requests although 2*CONC is 4, and a DP-aware router on the served port before the worker."""
    deployment = render_config_point(Workspace(_with_dp_row(tmp_path)), policy, SCRIPTS[1], "dep8/c2").deployment
    router, worker = deployment.blocks
    assert router.kind == "sglang-router" and router.cmd == "python3 -m sglang_router.launch_router"
    assert router.args == (("--host", "0.0.0.0"), ("--port", "8000"), ("--policy", "consistent_hashing"),
                           ("--request-id-headers", "x-correlation-id"), ("--dp-aware",),
                           ("--connect-timeout-secs", "900"), ("--request-timeout-secs", "14400"), ("--disable-health-check",),
                           ("--disable-retries",), ("--worker-urls", "http://127.0.0.1:30000"))
    # The router inherits everything the script exported before it (the SGLang cookbook shows the same
    # engine variables on its router block); the harness's own variables are dropped with reasons.
    assert router.env == ENGINE_ENV
    args = {a[0]: a[1:] for a in worker.args}
    assert {f: args.get(f) for f in ("--enable-dp-attention", "--dp-size", "--enable-dp-lm-head", "--max-running-requests", "--port")} == {
        "--enable-dp-attention": (), "--dp-size": ("8",), "--enable-dp-lm-head": (), "--max-running-requests": ("8",), "--port": ("30000",)}
    settings = {s.path: s.cls for s in deployment.settings}
    assert settings["frontend.args.prometheus-port"] == settings["frontend.args.prometheus-host"] == "harness-only"
    assert settings["frontend.env.PYTHONNOUSERSITE"] == settings["frontend.env.AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID"] == "harness-only"
    assert settings["roles.agg.env.AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID"] == "harness-only"


def test_dp_attention_c64_keeps_the_chunk_probe(tmp_path: Path, policy) -> None:
    args = _worker(Workspace(_with_dp_row(tmp_path)), policy, SCRIPTS[1], "dep8/c64")
    assert args["--max-running-requests"] == ("64",) and args["--chunked-prefill-size"] == ("2048",)


# --- the sandbox ----------------------------------------------------------------------------------

MASTER = """\
hostile-fp4-h200-sglang:
  image: lmsysorg/sglang:latest
  model: org/model
  model-prefix: hostile
  runner: cluster:h200-test
  precision: fp4
  framework: sglang
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - { tp: 1, conc-start: 4, conc-end: 20 }
"""
SHOWN = "benchmarks/single_node/agentic/hostile_fp4_h200_sglang.sh"


def _hostile_checkout(tmp_path: Path, fixture: str) -> Path:
    root = tmp_path / "checkout"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "nvidia-master.yaml").write_text(MASTER)
    (root / SHOWN).parent.mkdir(parents=True)
    shutil.copy(HOSTILE / fixture, root / SHOWN)
    return root


REFUSED = ("which the sandbox refuses (allowed: the engine launches, benchmark_lib.sh's functions, hf download, nvidia-smi, "
           "the probes `find -name ptxas`, `hostname` and `df --output=avail`, the shell's builtins and ")
HOSTILE_CASES = {
    "network.sh": ({4}, "runs `curl`, " + REFUSED),
    "devtcp.sh": ({4}, "bash: /dev/tcp/1.1.1.1/80: Network is unreachable"),
    # the loop's test or its body (or, on a loaded machine, the library it sources), wherever the time limit finds it
    "forever.sh": ({3, 4, 5}, "still running after 2 s (the sandbox's time limit)"),
    "nolaunch.sh": ({5}, "launches no engine (python3 -m sglang.launch_server, sglang_router, vllm serve, python3 -m dynamo.*)"),
    "syntax.sh": ({6}, "bash: syntax error near unexpected token `fi'"),
    "huge.sh": ({6}, "writes more than 1048576 bytes to one file or its output (the sandbox's size limit)"),
    "fails.sh": ({7}, "fails with exit status 1: Error: TP must be 8, got 1"),
}


@pytest.mark.parametrize("fixture", list(HOSTILE_CASES))
def test_hostile_script_is_one_located_error(capsys, tmp_path: Path, monkeypatch, fixture: str) -> None:
    monkeypatch.setattr(script, "LIMIT_SECONDS", 2)
    lines, message = HOSTILE_CASES[fixture]
    match = one_problem(capsys, ["render", "--source", str(_hostile_checkout(tmp_path, fixture)), "--config", "hostile-fp4-h200-sglang",
                                 "--point", "c4"])
    assert (match["file"], match["key"]) == (SHOWN, "script") and int(match["line"]) in lines
    assert match["msg"].startswith(message), match["msg"]


def test_conc_start_to_conc_end_doubles_and_keeps_the_end(tmp_path: Path) -> None:
    entry = Workspace(_hostile_checkout(tmp_path, "fails.sh")).entry("hostile-fp4-h200-sglang")
    assert entry.point_ids() == ["tp1/c4", "tp1/c8", "tp1/c16", "tp1/c20"]


def test_missing_script_is_named_by_the_convention(capsys, tmp_path: Path) -> None:
    root = _hostile_checkout(tmp_path, "fails.sh")
    (root / SHOWN).unlink()
    match = one_problem(capsys, ["render", "--source", str(root), "--config", "hostile-fp4-h200-sglang", "--point", "c4"])
    assert match["file"] == "configs/nvidia-master.yaml" and match["msg"] == (f"recipe file not found: {SHOWN}, nor the runners' fallback "
                                                                                      "benchmarks/single_node/agentic/hostile_fp4_h200.sh")


# --- build, export and diff accept script points like any other -----------------------------------

MANIFEST = """\
title: Script cookbook
source: {source}
repo: https://github.com/SemiAnalysisAI/InferenceX
generated_on: 2026-11-29
pages:
  - model: deepseek-ai/DeepSeek-V4.1-Flash
    title: DeepSeek-V4.1-Flash
    configs:
      - key: dsv41flash-fp4-gb200-sglang-agentic-dspark
        pr: 3347
        commit: d8398c0da69f2fd5f8300a9b80fa43c6f80ae2aa
        run: null
        merged: false
"""


def test_build_export_and_diff_of_a_script_config(capsys, tmp_path: Path) -> None:
    manifest = tmp_path / "cookbook.yaml"
    manifest.write_text(MANIFEST.format(source=INFERENCEX))
    code, _, err = run_cli(capsys, ["build", "--cookbook", str(manifest), "--out", str(tmp_path / "site"), "--no-cache"])
    assert code == 0, err
    (cell,) = json.loads((tmp_path / "site" / "cookbook.json").read_text())["pages"][0]["cells"]
    assert cell["hardware"] == "gb200" and cell["disclosures"] == ["synthetic-acceptance"]
    assert [p["id"] for p in cell["points"]] == [f"tp4-ep4/c{c}" for c in (1, 2, 4, 8, 16, 32, 64, 128)]
    assert {p["recipe"] for p in cell["points"]} == {"benchmarks/single_node/agentic/dsv41flash_fp4_gb200_sglang_mtp.sh"}

    module = tmp_path / "module.jsx"
    assert run_cli(capsys, ["export", "--cookbook", str(manifest), "--out", str(module)])[0] == 0
    code, out, err = run_cli(capsys, ["diff", "--cookbook", str(module), "--source", str(INFERENCEX)])
    assert code == 0 and out.startswith("cookbookgen diff: PASS (exit 0): parity; compared ") and "  points    8 paired and compared\n" in out, out + err

    # A cookbook that drifted from the script: every point names the script line that launched the worker.
    text = module.read_text()
    assert text.count('"--mem-fraction-static", "0.70"') == 1
    module.write_text(text.replace('"--mem-fraction-static", "0.70"', '"--mem-fraction-static", "0.80"'))
    code, out, _ = run_cli(capsys, ["diff", "--cookbook", str(module), "--source", str(INFERENCEX)])
    assert code == 1 and out.count("✗ agg: arg --mem-fraction-static: different value (recipe 0.70; cookbook 0.80)") == 8
    assert "benchmarks/single_node/agentic/dsv41flash_fp4_gb200_sglang_mtp.sh:156]" in out   # "${SGLANG_CMD[@]}" ... &


def test_diff_of_a_published_script_cell_reports_its_true_mismatches(capsys) -> None:
    """The SGLang cookbook's GB200 cells (DeepSeek-V4.1 module, run at PR 3347's 85d8aee8) against the
    corpus's master entry (EP4 on a dev-dsv41 image) and its later script: the image and the expert
    parallel size really differ; each difference names the master line or the script's launch line."""
    module = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4_1.gb200-excerpt.jsx"
    code, out, err = run_cli(capsys, ["diff", "--cookbook", str(module), "--source", str(INFERENCEX), "--config", SCRIPTS[0]])
    assert code == 1 and "Traceback" not in err
    assert out.count("✗ agg: arg --ep-size: different value (recipe 4; cookbook 1) — engine argument "
                     "[roles.agg.args.ep-size, benchmarks/single_node/agentic/dsv41flash_fp4_gb200_sglang_mtp.sh:156]") == 8
    assert out.count("✗ cell: image image: different value (recipe lmsysorg/sglang:dev-dsv41; cookbook lmsysorg/sglang:nightly-dev-cu13-20260923") == 8


def test_list_names_the_script_of_every_point_without_running_it(capsys) -> None:
    code, out, _ = run_cli(capsys, ["list", "--source", str(INFERENCEX), "--format", "json"])
    configs = {c["key"]: c for c in json.loads(out)["configs"]}
    assert code == 0
    assert {(p["id"], p["recipe"], p["selector"], p["problem"]) for p in configs[SCRIPTS[2]]["points"]} == {
        (f"tp8-ep8/c{c}", "benchmarks/single_node/agentic/dsv41flash_fp4_h100_sglang_mtp.sh", None, None) for c in (1, 2, 4, 8)}
    # The H200 vLLM entry's script is a symbolic link the corpus does not hold.
    problems = {p["problem"] for p in configs["dsv41flash-fp4-h200-vllm-agentic-dspark"]["points"]}
    assert {p.split(": ", 2)[2] for p in problems} == {
        "recipe file not found: benchmarks/single_node/agentic/dsv41flash_fp4_h200_vllm_mtp.sh, nor the runners' fallback "
        "benchmarks/single_node/agentic/dsv41flash_fp4_h200_mtp.sh"}
    assert all(p.startswith("configs/nvidia-master.excerpt.yaml:") for p in problems)
