"""InferenceX's own checkout (issue 31): benchmark scripts run as the runners run them, every framework
renders or its config alone is refused with a located reason.

- `script_points.json` (tests/data/corpus/inferencex-843c6254-golden/, checked by reading each script:
  see its README) pins what 44 points of 15 scripts launch: the runners' script lookup with its fallback
  name, ISL/OSL/MAX_MODEL_LEN of the scenario group, TOTAL_CPU_DRAM_GB from runners.yaml, `/workspace`
  paths, setup steps before the launch only, and the launch forms (`sglang serve`, `vllm serve`,
  `mpirun ... trtllm-serve`, ATOM, a script with its own EXIT trap);
- `rendered_points.json` (same folder, checked by reading each script) pins the published commands of
  7 trtllm-serve and ATOM points, the options file the script writes included, and of 2 vLLM
  DP-attention points that start the vLLM router (vllm-router) in front of the worker;
- the excerpt as a whole: `list` lists all 37 configs, the frameworks cookbookgen does not render
  (llmd-vllm, tilert) are refused with their reasons (the AMD multi-node sglang-disagg and atom-disagg
  configs: tests/test_amd_disagg.py), every point of the others renders;
- with INFERENCEX_TREE naming a whole checkout (843c6254), every point of every config renders or is
  refused with a located reason (`file:line: key: reason`), and `list` exits 0.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from cookbookgen.cli import main
from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_config_point, render_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.launches import recipe_from_capture, script_capture
from cookbookgen.recipes.master import check_framework
from cookbookgen.recipes.script import Capture, Launch
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RunMemo
from cookbookgen.render.shell import block_argv

from conftest import CORPUS

EXCERPT = CORPUS / "inferencex-843c6254"
GOLDEN = json.loads((CORPUS / "inferencex-843c6254-golden" / "script_points.json").read_text(encoding="utf-8"))
RENDERED = json.loads((CORPUS / "inferencex-843c6254-golden" / "rendered_points.json").read_text(encoding="utf-8"))
SHOWN = ("TP", "EP_SIZE", "DP_ATTENTION", "CONC", "ISL", "OSL", "MAX_MODEL_LEN", "KV_OFFLOADING", "KV_OFFLOAD_BACKEND", "TOTAL_CPU_DRAM_GB")
LOCATED = re.compile(r"^[^\s:][^:]*:\d+: \S+: .+")


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace(EXCERPT)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_script_point_launches_what_its_script_says(ws: Workspace, name: str) -> None:
    key, point = name.split(" ")
    entry = ws.entry(key)
    row, conc = next((r, c) for r in entry.rows for c in r.concs if f"{r.slug}/c{c}" == point)
    path = ws.recipe_path(entry, row)
    variables, capture = script_capture(ws.script_files(path), ws.shown(path), entry, row, conc, ws.runners(entry))
    got = {"script": ws.shown(path), "variables": {k: variables[k] for k in SHOWN if k in variables},
           "launches": [{"kind": x.kind, "line": x.line, "argv": list(x.argv), "env": x.env} for x in capture.launches],
           "setup": [[line, list(argv)] for line, argv in capture.setup]}
    assert got == GOLDEN[name]


def test_no_path_of_this_machine_reaches_a_launch() -> None:
    text = json.dumps(GOLDEN)
    assert "/tmp" not in text and "cookbookgen-" not in text and str(Path.home()) not in text


def test_the_excerpt_lists_every_config_and_refuses_the_frameworks_it_does_not_render(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--source", str(EXCERPT), "--format", "json"]) == 0
    configs = {c["key"]: c for c in json.loads(capsys.readouterr().out)["configs"]}
    assert len(configs) == 37
    refused = {k: c["problem"] for k, c in configs.items() if c["problem"]}
    assert sorted(refused) == ["dsv4-fp4-gb200-llmd-vllm", "glm5.1-fp8-b200-tilert"]      # atom-disagg renders (test_amd_atom_disagg.py)
    assert all(LOCATED.match(p) for p in refused.values())
    assert len(configs["dsv4-fp4-mi355x-atom-disagg"]["points"]) == 11
    # what llm-d's and TileRT's scripts start, and why no command is published (a Slurm job of shell processes,
    # not a Kubernetes deployment, whose processes cookbookgen has no renderer for)
    llmd, tilert = refused["dsv4-fp4-gb200-llmd-vllm"], refused["glm5.1-fp8-b200-tilert"]
    assert llmd.startswith("configs/nvidia-master.yaml:303: dsv4-fp4-gb200-llmd-vllm.framework: framework 'llmd-vllm' is not rendered: ")
    assert all(part in llmd for part in ("benchmarks/multi_node/dsv4_fp4_gb200_llmd-vllm-disagg.sh", "no Kubernetes", "llm-d/server.sh",
                                         "--data-parallel-hybrid-lb", "llm-d-recipes/", "pd-sidecar", "EPP", "Envoy"))
    assert tilert.startswith("configs/nvidia-master.yaml:383: glm5.1-fp8-b200-tilert.framework: framework 'tilert' is not rendered: ")
    assert all(part in tilert for part in ("benchmarks/multi_node/glm5.1_fp8_b200_tilert-disagg.sh", "tilert_utils/submit.sh",
                                           "tilert.pd_vllm.decode_server", "TileRTConnector", "tilert.pd_vllm.pd_router", "PREFILL_IMAGE"))
    assert main(["list", "--source", str(EXCERPT), "--strict"]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_a_rendered_point_publishes_what_its_script_launches(ws: Workspace, name: str) -> None:
    key, point = name.split(" ")
    blocks = render_config_point(ws, load_policy(None), key, point).deployment.blocks
    got = [{"kind": b.kind, "role": b.role, "argv": block_argv(b), "files": b.files} for b in blocks]
    assert got == RENDERED[name]


def test_the_options_file_is_published_as_the_script_wrote_it(ws: Workspace) -> None:
    """Byte for byte (the trailing blank of `enable_block_reuse: false `, the four-space indent) unless a
    setting of it is changed: then the file is written from the options as they are, never stale; with
    the file's record unset, the options still reach the command (a file of their own)."""
    policy = load_policy(None)
    block = render_config_point(ws, policy, "dsr1-fp4-b200-trt", "tp4/c4").deployment.blocks[0]
    assert "    enable_block_reuse: false \n" in block.files["dsr1-fp4.yml"]
    changed = render_config_point(ws, policy, "dsr1-fp4-b200-trt", "tp4/c4", sets=["roles.agg.options.stream_interval=20"])
    text = changed.deployment.blocks[0].files["dsr1-fp4.yml"]
    assert yaml.safe_load(text)["stream_interval"] == 20 and yaml.safe_load(text)["kv_cache_config"]["free_gpu_memory_fraction"] == 0.8
    unset = render_config_point(ws, policy, "dsr1-fp4-b200-trt", "tp4/c4", unsets=["roles.agg.options_file"]).deployment.blocks[0]
    assert ("--extra_llm_api_options", "extra_llm_api_options_agg.yaml") in unset.args
    assert yaml.safe_load(unset.files["extra_llm_api_options_agg.yaml"]) == yaml.safe_load(block.files["dsr1-fp4.yml"])


def test_the_recipe_config_of_the_excerpt_renders_its_per_gpu_workers(ws: Workspace) -> None:
    """dynamo-vllm (a framework refused before issue 31) is read through its recipes. These recipes launch
    one vLLM process per GPU (`backend.dp_launch_mode: per_gpu`): every point renders a block per process
    of its data-parallel workers (checked against srtctl itself in test_srtctl_per_gpu.py)."""
    entry = ws.entry("kimik2.6-fp4-b200-dynamo-vllm")
    check_framework(entry)
    policy, memo = load_policy(None), RunMemo()
    ranks = []
    for row in entry.rows:
        for conc in row.concs:
            blocks = render_point(ws.point(entry, row, conc), policy, False, memo).blocks
            ranks.append(sum(b.workers or 1 for b in blocks if b.arg_values("--data-parallel-rank")))   # processes
    # the DEP8 or DEP4 prefill worker(s), and the DEP8 decode worker of the dep8-dep8 points
    assert ranks == [8, 4, 4, 4, 16, 24]


@pytest.mark.skipif(not os.environ.get("INFERENCEX_TREE"), reason="set INFERENCEX_TREE to an InferenceX checkout (843c6254) to walk it whole")
def test_every_point_of_a_whole_checkout_renders_or_is_refused_with_its_location(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(os.environ["INFERENCEX_TREE"])
    assert main(["list", "--source", str(root)]) == 0
    capsys.readouterr()
    ws, policy = Workspace(root), load_policy(None)
    rendered = refused = 0
    for key, entry in ws.entries().items():
        try:
            check_framework(entry)
            rows = entry.rows
        except CookbookError as exc:
            assert LOCATED.match(str(exc.problems[0])), (key, str(exc.problems[0]))
            refused += 1
            continue
        memo = RunMemo()
        for row in rows:
            for conc in row.concs:
                try:
                    render_point(ws.point(entry, row, conc), policy, False, memo)
                    rendered += 1
                except CookbookError as exc:
                    assert LOCATED.match(str(exc.problems[0])), (key, row.slug, conc, str(exc.problems[0]))
                    refused += 1
        ws.release_points()
    assert len(ws.entries()) == 208 and rendered > 1000


# A point the runner starts with more than cookbookgen renders is refused at the line that starts it,
# never published without it (points of the excerpt's configs added for the image's programs).
REFUSED_POINTS = {
    # the Mooncake master, started in the background above the launch (its refusal raced the launch's record)
    ("minimaxm3-fp8-h100-vllm-agentic-mtp", "tp8/c6"): "benchmarks/single_node/agentic/minimaxm3_fp8_h100_mtp.sh:90: script: starts "
                                                       "`mooncake_master`, the Mooncake master",
}


@pytest.mark.parametrize("key,point", sorted(REFUSED_POINTS))
def test_a_point_needing_a_process_cookbookgen_does_not_render_is_refused_at_its_line(ws: Workspace, key: str, point: str) -> None:
    entry = ws.entry(key)
    row, conc = next((r, c) for r in entry.rows for c in r.concs if f"{r.slug}/c{c}" == point)
    with pytest.raises(CookbookError) as refused:
        render_point(ws.point(entry, row, conc), load_policy(None), False, RunMemo())
    assert str(refused.value.problems[0]).startswith(REFUSED_POINTS[key, point])


def test_a_router_is_rendered_only_in_front_of_a_worker_of_its_engine() -> None:
    """The vLLM router fronts a vLLM worker and SGLang's router an SGLang worker; a script that puts
    one before the other engine's worker is refused at the router's line, never half rendered."""
    shown = "benchmarks/single_node/x.sh"
    variables = {"MODEL": "org/model", "TP": "8"}
    sglang = Launch("sglang", 10, ("--model-path", "org/model", "--tp", "8"), {})
    vllm = Launch("vllm", 10, ("org/model", "--data-parallel-size", "8"), {})
    vllm_router = Launch("vllm-router", 20, ("--worker-urls", "http://localhost:8889", "--intra-node-data-parallel-size", "8"), {})
    sglang_router = Launch("sglang-router", 20, ("--worker-urls", "http://localhost:8889", "--dp-aware"), {})
    recipe = recipe_from_capture(Capture((vllm, vllm_router), ()), shown, variables)
    assert recipe.data["frontend"] == {"type": "vllm-router", "args": {"worker-urls": "http://localhost:8889",
                                                                      "intra-node-data-parallel-size": "8"}}
    assert recipe.data["roles"]["agg"] == {"args": {"data-parallel-size": "8"}}
    for worker, router in ((sglang, vllm_router), (vllm, sglang_router)):
        with pytest.raises(CookbookError) as refused:
            recipe_from_capture(Capture((worker, router), ()), shown, variables)
        assert str(refused.value.problems[0]) == (f"{shown}:20: script: starts 1 engine workers and 1 routers; one worker, with or "
                                                  "without one router of its engine (SGLang's before SGLang, vllm-router before vLLM), expected")
