"""InferenceX's own checkout (issue 31): benchmark scripts run as the runners run them, every framework
renders or its config alone is refused with a located reason.

- `script_points.json` (tests/data/corpus/inferencex-843c6254-golden/, checked by reading each script:
  see its README) pins what 44 points of 15 scripts launch: the runners' script lookup with its fallback
  name, ISL/OSL/MAX_MODEL_LEN of the scenario group, TOTAL_CPU_DRAM_GB from runners.yaml, `/workspace`
  paths, setup steps before the launch only, and the launch forms (`sglang serve`, `vllm serve`,
  `mpirun ... trtllm-serve`, ATOM, a script with its own EXIT trap);
- `rendered_points.json` (same folder, checked by reading each script) pins the published commands of
  7 trtllm-serve and ATOM points, the options file the script writes included;
- the excerpt as a whole: `list` lists all 29 configs, the framework cookbookgen does not render
  (atom-disagg) is refused with its reason (the AMD multi-node sglang-disagg configs: tests/test_amd_disagg.py);
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
from cookbookgen.recipes.launches import script_capture
from cookbookgen.recipes.master import check_framework
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
    assert len(configs) == 29
    refused = {k: c["problem"] for k, c in configs.items() if c["problem"]}
    assert sorted(refused) == ["dsv4-fp4-mi355x-atom-disagg"]
    assert all(LOCATED.match(p) for p in refused.values())
    assert "starts it with its own multi-node script, benchmarks/multi_node/dsv4_fp4_mi355x_atom-disagg.sh, which submits" \
        in refused["dsv4-fp4-mi355x-atom-disagg"]
    assert main(["list", "--source", str(EXCERPT), "--strict"]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_a_trtllm_serve_or_atom_point_publishes_what_its_script_launches(ws: Workspace, name: str) -> None:
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


def test_the_recipe_configs_of_the_excerpt_are_refused_at_the_setting_they_would_drop(ws: Workspace) -> None:
    """dynamo-vllm (a framework refused before issue 31) is read through its recipes. These recipes launch
    one vLLM process per GPU (`backend.dp_launch_mode: per_gpu`), which cookbookgen does not render yet:
    every point is refused at that recipe line instead of being rendered with the setting dropped."""
    entry = ws.entry("kimik2.6-fp4-b200-dynamo-vllm")
    check_framework(entry)
    policy, memo = load_policy(None), RunMemo()
    reasons = []
    for row in entry.rows:
        for conc in row.concs:
            with pytest.raises(CookbookError) as refused:
                render_point(ws.point(entry, row, conc), policy, False, memo)
            reasons.append(str(refused.value.problems[0]))
    assert len(reasons) == 6
    assert all(re.fullmatch(r"benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k2\.6/b200-fp4/8k1k/[\w.-]+\.yaml:26: backend\.dp_launch_mode: "
                            r"per_gpu \(srtctl's deprecated layout of one vLLM process per GPU\) is not rendered; use per_node, srtctl v1\.0\.68's default",
                            r) for r in reasons), reasons


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
    # the DP-attention arm starts vllm-router in front of the worker once it is ready
    ("dsv4-fp4-b200-vllm-agentic-mtp", "dep8/c32"): "benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh:324: script: launches the vLLM "
                                                    "router (vllm-router), which cookbookgen does not render from a benchmark script yet",
    # the Mooncake master, started in the background above the launch (its refusal raced the launch's record)
    ("minimaxm3-fp8-h100-vllm-agentic-mtp", "tp8/c6"): "benchmarks/single_node/agentic/minimaxm3_fp8_h100_mtp.sh:90: script: runs "
                                                       "`mooncake_master`, which the sandbox refuses",
}


@pytest.mark.parametrize("key,point", sorted(REFUSED_POINTS))
def test_a_point_needing_a_process_cookbookgen_does_not_render_is_refused_at_its_line(ws: Workspace, key: str, point: str) -> None:
    entry = ws.entry(key)
    row, conc = next((r, c) for r in entry.rows for c in r.concs if f"{r.slug}/c{c}" == point)
    with pytest.raises(CookbookError) as refused:
        render_point(ws.point(entry, row, conc), load_policy(None), False, RunMemo())
    assert str(refused.value.problems[0]).startswith(REFUSED_POINTS[key, point])
