"""`cookbookgen diff` of the trtllm-serve, ATOM and vllm-router points InferenceX's benchmark scripts launch (issue 31):
the published commands of the excerpt (tests/data/corpus/inferencex-843c6254) are at parity with the
scripts, and a drift of a script (a value of the options file it writes, the mpirun it starts trtllm-serve
under, a flag, an exported variable, a flag of the vLLM router) is a mismatch naming the setting."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

import pytest

from cookbookgen.commands.diff import run_diff
from cookbookgen.pipeline import render_all_points
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace

from conftest import CORPUS

EXCERPT = CORPUS / "inferencex-843c6254"
CONFIGS = ("dsr1-fp4-b200-trt", "dsr1-fp4-mi355x-atom", "dsv4-fp4-b200-vllm-agentic-mtp")
TRT = "benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200_trt.sh"
ATOM = "benchmarks/single_node/fixed_seq_len/dsr1_fp4_mi355x_atom.sh"
VLLM = "benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh"       # its DEP8 rows start vllm-router in front of the worker
DRIFTS = [  # (script, text replaced once, new text, the setting the mismatch names)
    (TRT, "    free_gpu_memory_fraction: 0.8\n", "    free_gpu_memory_fraction: 0.85\n", "roles.agg.options_file.text"),
    (TRT, "    free_gpu_memory_fraction: 0.8\n", "    free_gpu_memory_fraction: 0.85\n",
     "roles.agg.options.kv_cache_config.free_gpu_memory_fraction"),
    (TRT, "mpirun -n 1 --oversubscribe --allow-run-as-root \\\n    trtllm-serve",
     "mpirun -n 1 --allow-run-as-root \\\n    trtllm-serve", "roles.agg.launcher"),
    (TRT, '    --trust_remote_code \\\n    --backend=pytorch', "    --backend=pytorch", "--trust_remote_code"),
    (TRT, 'EXTRA_CONFIG_FILE="dsr1-fp4.yml"', 'EXTRA_CONFIG_FILE="dsr1.yml"', "roles.agg.options_file.name"),
    (ATOM, "BLOCK_SIZE=${BLOCK_SIZE:-16}", "BLOCK_SIZE=${BLOCK_SIZE:-32}", "roles.agg.args.block-size"),
    (ATOM, "export OMP_NUM_THREADS=1", "export OMP_NUM_THREADS=2", "roles.agg.env.OMP_NUM_THREADS"),
    (ATOM, "    -tp $TP \\\n", "    -tp 1 \\\n", "roles.agg.args.-tp"),
    (VLLM, "VLLM_ROUTER_POLICY=consistent_hash", "VLLM_ROUTER_POLICY=round_robin", "frontend.args.policy"),
    (VLLM, "        --request-timeout-secs 14400 \\\n        --disable-retries >", "        --request-timeout-secs 14400 >", "--disable-retries"),
]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("script-engines")
    shutil.copytree(EXCERPT, tmp / "inferencex")
    ws, policy = Workspace(EXCERPT), load_policy()
    docs = []
    for key in CONFIGS:
        for rendered in render_all_points(ws, policy, key):
            point, dep = rendered.point, rendered.deployment
            docs.append({"config": key, "point": point.point_id, "label": point.label, "concurrencies": [point.conc],
                         "recipe": point.recipe.label, "model": dep.model, "image": dep.image,
                         "blocks": [b.to_json() for b in dep.blocks]})
    (tmp / "rendered.json").write_text(json.dumps(docs), encoding="utf-8")
    return tmp / "rendered.json", tmp / "inferencex"


def _mismatches(cookbook: Path, source: Path, config: str) -> tuple[int, list[dict]]:
    out = io.StringIO()
    status = run_diff(argparse.Namespace(cookbook=[cookbook], source=source, config=config, logs=None, format="json", policy=None), out)
    return status, [f for f in json.loads(out.getvalue())["findings"] if f["cls"] == "mismatch"]


@pytest.mark.parametrize("config", CONFIGS)
def test_the_published_script_points_are_at_parity(published: tuple[Path, Path], config: str) -> None:
    assert _mismatches(*published, config) == (0, [])


@pytest.mark.parametrize("drift", DRIFTS, ids=[d[3] for d in DRIFTS])
def test_a_drift_of_the_script_is_a_mismatch_naming_its_setting(published: tuple[Path, Path], drift: tuple[str, str, str, str]) -> None:
    cookbook, source = published
    script, old, new, names = drift
    path = source / script
    original = path.read_text(encoding="utf-8")
    assert original.count(old) == 1
    path.write_text(original.replace(old, new), encoding="utf-8")
    try:
        status, found = _mismatches(cookbook, source, CONFIGS[(TRT, ATOM, VLLM).index(script)])
    finally:
        path.write_text(original, encoding="utf-8")
    assert status == 1 and any(names in (f["item"], f.get("path")) for f in found), [(f["item"], f.get("path")) for f in found][:5]
