"""Probes of the container or machine in InferenceX's benchmark scripts (issue 31, scripts run as the
runners run them): `find ... -name ptxas`, `hostname`, `df --output=avail` are answered inside the sandbox
by stubs with documented placeholders, never by the host; a Python program on standard input never runs.

- `probe_points.json` (tests/data/corpus/inferencex-843c6254-golden/, checked by reading the script: see
  its README) pins the published commands of 3 points of dsv4_fp4_b200_sglang_mtp.sh, whose
  TRITON_PTXAS_PATH comes from `find` over the container's CUDA folders: `$PTXAS_PATH` for the reader;
- `diff` of the config's 12 published points against the script is parity, and a drift is a mismatch;
- the points still refused are refused at the script line that stops them, with the reason
  (REFUSED_POINTS: what each script checks is said beside it).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

import pytest

from cookbookgen.commands.diff import run_diff
from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_all_points, render_config_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render import shell
from cookbookgen.render.shell import block_argv

from conftest import CORPUS

EXCERPT = CORPUS / "inferencex-843c6254"
PROBED = json.loads((CORPUS / "inferencex-843c6254-golden" / "probe_points.json").read_text(encoding="utf-8"))
AGENTIC = "benchmarks/single_node/agentic/"
PROBED_CONFIG = "dsv4-fp4-b200-sglang-agentic-hicache-mtp"


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace(EXCERPT)


@pytest.mark.parametrize("name", sorted(PROBED))
def test_a_probed_point_publishes_what_its_script_launches(ws: Workspace, name: str) -> None:
    key, point = name.split(" ")
    blocks = render_config_point(ws, load_policy(None), key, point).deployment.blocks
    got = [{"kind": b.kind, "role": b.role, "argv": block_argv(b), "files": b.files} for b in blocks]
    assert got == PROBED[name]


def test_the_ptxas_placeholder_is_documented_and_expands_in_the_readers_shell(ws: Workspace) -> None:
    """The published line `TRITON_PTXAS_PATH="$PTXAS_PATH"`: the reader's shell expands the placeholder
    (a documented one), the settings report says where it comes from, and no path of this machine or of
    the sandbox is in it."""
    rendered = render_config_point(ws, load_policy(None), "dsv4-fp4-b200-sglang-agentic-hicache-mtp", "tp8/c4")
    block = rendered.deployment.blocks[0]
    assert shell.documented("PTXAS_PATH")
    assert block.env["TRITON_PTXAS_PATH"] == "$PTXAS_PATH"
    assert 'TRITON_PTXAS_PATH="$PTXAS_PATH" \\' in shell.command_lines(block)
    settings = {s.path: s for s in rendered.deployment.settings}
    ptxas = settings["roles.agg.env.TRITON_PTXAS_PATH"]
    assert (ptxas.cls, ptxas.replacement) == ("placeholder", "$PTXAS_PATH")
    # the script's PATH (AIPerf's virtualenv before the sandbox's /bin) is the benchmark client's, never published
    assert settings["roles.agg.env.PATH"].cls == "harness-only" and "PATH" not in block.env


# Points the probes' stubs do not make renderable: the script line that stops each, and why.
REFUSED_POINTS = {
    # `hostname` is answered ($HOSTNAME, in the script's own error message); what stops the point is the RDMA
    # rail probe before it: `grep -q ACTIVE /sys/class/infiniband/mlx5_N/ports/1/state` for 16 NICs. The
    # sandbox has no /sys, and a rail name is no placeholder the script's yes/no loop could take.
    ("kimik3-fp4-b300-vllm-agentic-dspark", "tp8/c8"):
        AGENTIC + "kimik3_fp4_b300_vllm_mtp.sh:146: script: a command fails with exit status 1: Error: no active RDMA rail on $HOSTNAME; "
                  "Mooncake cannot initialise",
    # resolve_complete_model_snapshot (lines 13-44): a Python program on standard input that reads the Hugging
    # Face cache (refs/main, config.json, the shards of model.safetensors.index.json) and prints the complete
    # snapshot's folder: a probe of the runner's disk, not a computation: python3 never runs
    ("minimaxm3-fp8-h200-vllm-agentic-mtp", "tp8/c1"):
        AGENTIC + "minimaxm3_fp8_h200_mtp.sh:14: script: runs `python3 -`, which the sandbox refuses",
    # checkpoint_is_complete (lines 45-67): a folder with config.json, then a Python program on standard input
    # that checks every shard model.safetensors.index.json names (or any *.safetensors). The sandbox's
    # `hf download` writes nothing, so the draft's folder is never complete: the script's own error at line 121
    ("minimaxm3-fp4-b200-vllm-agentic-mtp", "tp4/c5"):
        AGENTIC + "minimaxm3_fp4_b200_mtp.sh:121: script: fails with exit status 1: Error: nvidia/MiniMax-M3-EAGLE3-GQA is incomplete after "
                  "hf download Inferact/MiniMax-M3-EAGLE3-GQA.",
    # `df -BG --output=avail /dev/shm` (line 104) is answered ($FREE_SPACE: no number, so the script skips its
    # /dev/shm size check, as it does when df says nothing; it stopped the point before); the LMCache servers it
    # then starts in the background, one per TP rank (lines 122-146), are a service of the deployment
    # cookbookgen does not render from a script yet: the point stops at the first
    ("minimaxm3-fp4-mi355x-vllm-agentic-mtp", "tp4-2/c32"):
        AGENTIC + "minimaxm3_fp4_mi355x_mtp.sh:141: script: starts `lmcache server`, an LMCache server (the engine's KV cache tier in "
                  "host memory, one per TP rank): a service of the deployment beside the engine, which cookbookgen does not render",
    ("minimaxm3-fp8-mi300x-vllm-agentic-mtp", "tp8/c16"):
        AGENTIC + "minimaxm3_fp8_mi300x_mtp.sh:110: script: starts `lmcache server`, an LMCache server",
    # the Mooncake master (line 90), started in the background before the engine, which connects to it
    ("minimaxm3-fp8-h100-vllm-agentic-mtp", "tp8/c8"):
        AGENTIC + "minimaxm3_fp8_h100_mtp.sh:90: script: starts `mooncake_master`, the Mooncake master (the metadata service of the "
                  "engine's Mooncake KV store): a service of the deployment beside the engine",
}


@pytest.mark.parametrize("key,point", sorted(REFUSED_POINTS))
def test_a_point_the_probes_do_not_free_is_refused_at_its_line(ws: Workspace, key: str, point: str) -> None:
    with pytest.raises(CookbookError) as refused:
        render_config_point(ws, load_policy(None), key, point)
    assert str(refused.value.problems[0]).startswith(REFUSED_POINTS[key, point])


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The probed config's published points (as `build` writes them) and a copy of the excerpt to drift."""
    tmp = tmp_path_factory.mktemp("probes")
    shutil.copytree(EXCERPT, tmp / "inferencex")
    ws, policy = Workspace(EXCERPT), load_policy()
    docs = []
    for rendered in render_all_points(ws, policy, PROBED_CONFIG):
        point, dep = rendered.point, rendered.deployment
        docs.append({"config": PROBED_CONFIG, "point": point.point_id, "label": point.label, "concurrencies": [point.conc],
                     "recipe": point.recipe.label, "model": dep.model, "image": dep.image, "blocks": [b.to_json() for b in dep.blocks]})
    (tmp / "rendered.json").write_text(json.dumps(docs), encoding="utf-8")
    return tmp / "rendered.json", tmp / "inferencex"


def _mismatches(cookbook: Path, source: Path) -> tuple[int, list[dict]]:
    out = io.StringIO()
    status = run_diff(argparse.Namespace(cookbook=[cookbook], source=source, config=PROBED_CONFIG, logs=None, format="json", policy=None), out)
    return status, [f for f in json.loads(out.getvalue())["findings"] if f["cls"] == "mismatch"]


def test_the_probed_points_are_at_parity_and_a_drift_is_a_mismatch(published: tuple[Path, Path]) -> None:
    """`diff` of the 12 published points against the script: parity (the placeholder is what the script's
    probe stands for, not a drift); a flag the script changes is a mismatch naming it."""
    cookbook, source = published
    assert _mismatches(cookbook, source) == (0, [])
    script = source / AGENTIC / "dsv4_fp4_b200_sglang_mtp.sh"
    original = script.read_text(encoding="utf-8")
    assert original.count("MEM_FRACTION_STATIC=0.88\n") == 1
    script.write_text(original.replace("MEM_FRACTION_STATIC=0.88\n", "MEM_FRACTION_STATIC=0.86\n"), encoding="utf-8")
    try:
        status, found = _mismatches(cookbook, source)
    finally:
        script.write_text(original, encoding="utf-8")
    assert status == 1 and any("mem-fraction-static" in (f["item"] + str(f.get("path"))) for f in found), found[:3]
