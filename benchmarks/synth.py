"""Generate a synthetic InferenceX-layout repository for the benchmark: N configs x 10 points.

Recipes have the size and shape of the public ones (a `base` with ~40 engine args and ~30 env
entries per role, services, frontend, harness sections, then one `override_*` per point), in the
three topologies the product renders: Dynamo aggregated, Dynamo disaggregated, standalone SGLang.
Deterministic for a given seed.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

POINTS = 10
# An image no rule of flags/engines.yaml dates: the synthetic options are checked against the newest SGLang
# catalog, approximately, so they are reported but cannot fail the diff (a dated nightly would make each a mismatch).
IMAGE = "lmsysorg/sglang:synthetic-benchmark"
MODELS = [f"org/Model-{chr(ord('A') + i)}" for i in range(20)]  # 1,000 configs: ~50 per model page, as in a real repository


def _args(rng: random.Random, n: int) -> dict[str, object]:
    out: dict[str, object] = {"served-model-name": "org/model", "trust-remote-code": True, "enable-metrics": True}
    for i in range(n):
        kind = i % 4
        out[f"synthetic-option-{i}"] = [rng.randint(1, 4096), round(rng.random(), 3), True, f"value_{rng.randint(0, 99)}"][kind]
    out["model-loader-extra-config"] = '{"enable_multithread_load":true,"num_threads":8}'
    return out


def _env(rng: random.Random, n: int) -> dict[str, str]:
    out = {"PYTHONUNBUFFERED": "1", "HF_HUB_CACHE": "/hf_hub_cache", "SGLANG_SIMULATE_ACC_LEN": "3.51"}
    out.update({f"SGLANG_SYNTH_{i}": str(rng.randint(0, 100000)) for i in range(n)})
    return out


def _role(rng: random.Random, gpus: int, nodes: int, workers: int) -> dict[str, object]:
    return {"nodes": nodes, "workers": workers, "gpus": gpus, "env": _env(rng, 30),
            "args": {**_args(rng, 40), "tensor-parallel-size": gpus}}


def recipe(rng: random.Random, kind: str, concs: list[int]) -> dict[str, object]:
    base: dict[str, object] = {
        "name": f"synthetic-{kind}", "model": {"path": "hf:org/model", "container": IMAGE},
        "resources": {"gpu_type": "gb300", "gpus_per_node": 4}, "engine": "sglang",
        "slurm": {"time_limit": "4:00:00"}, "health_check": {"max_attempts": 1440, "interval_seconds": 10},
        "sbatch_directives": {"mem": "0", "cpus-per-task": "144"},
        "benchmark": {"type": "custom", "command": "bash bench.sh", "env": {"RESULT_DIR": "/logs", "AIPERF_X": "1"}},
    }
    if kind == "sglang":
        base["frontend"] = {"type": "sglang"}
        base["roles"] = {"agg": _role(rng, 4, 1, 1)}
    else:
        base["frontend"] = {"type": "dynamo", "args": {"router-mode": "kv"}, "env": {"DYN_X": "1"}}
        base["dynamo"] = {"install": False, "request_plane": "tcp"}
        base["services"] = [{"name": "etcd", "type": "etcd"}, {"name": "nats", "type": "nats", "options": {"max_payload_mb": 32}}]
        base["roles"] = ({"agg": _role(rng, 4, 1, 1)} if kind == "agg"
                         else {"prefill": _role(rng, 2, 1, 2), "decode": _role(rng, 8, 2, 1)})
    doc: dict[str, object] = {"base": base}
    role = "agg" if kind != "disagg" else "decode"
    for c in concs:
        doc[f"override_c{c}"] = {"roles": {role: {"args": {"max-running-requests": c * 2, "cuda-graph-max-bs": min(c, 512),
                                                          "synthetic-option-1": rng.randint(1, 9)}}},
                                 "benchmark": {"env": {"CONC": str(c)}}}
    return doc


def _changelog(keys: list[str]) -> list[dict[str, object]]:
    """An append-only perf-changelog as InferenceX keeps one: a few old entries naming keys by glob,
    then one entry per config (the PR its manifest entry names)."""
    old = [{"config-keys": [f"synth{k}*-fp4-gb300-*"], "description": ["Bump the image"], "pr-link": f"https://github.com/org/repo/pull/{900 + k}"}
           for k in range(10)]
    return old + [{"config-keys": [key], "description": [f"Add {key}"], "pr-link": f"https://github.com/org/repo/pull/{1000 + i}"}
                  for i, key in enumerate(keys)]


def generate(root: Path, configs: int, seed: int = 7) -> Path:
    """Write the repository under `root` and a cookbook manifest `root/cookbook.yaml`; return the manifest."""
    rng = random.Random(seed)
    e2e = root / "inferencex" / "inferencex-e2e"
    (e2e / "configs").mkdir(parents=True, exist_ok=True)
    master: dict[str, object] = {}
    pages: dict[str, list[dict[str, object]]] = {m: [] for m in MODELS}
    for i in range(configs):
        kind = ("agg", "disagg", "sglang")[i % 3]
        concs = [2 ** k for k in range(POINTS)]
        rel = f"synth/cfg{i:05d}/variants.yaml"
        path = e2e / "benchmarks/multi_node/srt-slurm-recipes" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(recipe(rng, kind, concs), sort_keys=False))
        key = f"synth{i:05d}-fp4-gb300-{kind}"
        model = MODELS[i % len(MODELS)]
        master[key] = {"image": IMAGE, "model": model, "runner": "cluster:gb300-nv",
                       "framework": "sglang" if kind == "sglang" else "dynamo-sglang", "precision": "fp4",
                       "scenarios": {"agentic-coding": [{"search-space": [
                           {"tp": 4, "conc-list": [c], "srt-recipe": f"recipes/{rel}:override_c{c}"} for c in concs]}]}}
        pages[model].append({"key": key, "pr": 1000 + i, "commit": f"{i:040x}", "run": 30000000000 + i, "merged": i % 2 == 0,
                             "date": "2026-10-16"})
    (e2e / "configs" / "nvidia-master.yaml").write_text(yaml.safe_dump(master, sort_keys=False))
    (e2e / "perf-changelog.yaml").write_text(yaml.safe_dump(_changelog(list(master)), sort_keys=False))
    manifest = {"title": "Synthetic cookbook", "source": "inferencex", "generated_on": "2026-11-29",
                "pages": [{"model": m, "configs": cs} for m, cs in pages.items() if cs]}
    out = root / "cookbook.yaml"
    out.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return out
