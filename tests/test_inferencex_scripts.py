"""InferenceX's own checkout (issue 31): benchmark scripts run as the runners run them, every framework
renders or its config alone is refused with a located reason.

- `script_points.json` (tests/data/corpus/inferencex-843c6254-golden/, checked by reading each script:
  see its README) pins what 32 points of 9 scripts launch: the runners' script lookup with its fallback
  name, ISL/OSL/MAX_MODEL_LEN of the scenario group, TOTAL_CPU_DRAM_GB from runners.yaml, `/workspace`
  paths, setup steps before the launch only, and the launch forms (`sglang serve`, `vllm serve`,
  `mpirun ... trtllm-serve`, ATOM, a script with its own EXIT trap);
- the excerpt as a whole: `list` lists all 11 configs, the three frameworks cookbookgen does not render
  are refused with their reasons, every point of the others renders;
- with INFERENCEX_TREE naming a whole checkout (843c6254), every point of every config renders or is
  refused with a located reason (`file:line: key: reason`), and `list` exits 0.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cookbookgen.cli import main
from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.launches import script_capture
from cookbookgen.recipes.master import check_framework
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RunMemo

from conftest import CORPUS

EXCERPT = CORPUS / "inferencex-843c6254"
GOLDEN = json.loads((CORPUS / "inferencex-843c6254-golden" / "script_points.json").read_text(encoding="utf-8"))
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
    assert len(configs) == 11
    refused = {k: c["problem"] for k, c in configs.items() if c["problem"]}
    assert sorted(refused) == ["dsr1-fp4-b200-trt", "dsr1-fp4-mi355x-atom", "dsr1-fp8-mi355x-sglang-disagg"]
    assert all(LOCATED.match(p) for p in refused.values())
    assert "start trtllm-serve" in refused["dsr1-fp4-b200-trt"] and "start ATOM" in refused["dsr1-fp4-mi355x-atom"]
    assert "benchmarks/multi_node/" in refused["dsr1-fp8-mi355x-sglang-disagg"]
    assert main(["list", "--source", str(EXCERPT), "--strict"]) == 1
    capsys.readouterr()


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
