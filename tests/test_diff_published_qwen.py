"""`cookbookgen diff` of the SGLang cookbook's published Qwen3.5 module (50 cells, 15 cited commits) against the
InferenceX files its cells cite: every cell ends checked or unpaired, and what fails the run is exactly the
hand-judged list of `data/expected/qwen3_5.findings.yaml` (the module and the files:
`data/corpus/inferencex-qwen35/SOURCES.md`).

The repository is built here, one commit per folder of corpus/inferencex-qwen35, and the module's citations of
those five commits are pointed at the new commits (582e19ab's folder holds the stored versions that stand in for
it); the other ten cited commits are not in it (nor in InferenceX's public history, nor in the search tool's
store), so their 31 cells are unpaired naming the commit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cookbookgen.flags.check import check_cell
from cookbookgen.recipes.load import read_yaml_file
from cookbookgen.recipes.schema import FrontendSpec
from cookbookgen.render.deploy import frontend_layout
from cookbookgen.render.model import Block
from test_bad_input import run_cli
from conftest import module_at_folder_commits
from test_diff_published import _by_cell

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus"
MODULE = CORPUS / "sglang-cookbook" / "agentx" / "Qwen" / "qwen3.5.jsx"
FILES = CORPUS / "inferencex-qwen35"
EXPECTED = DATA / "expected" / "qwen3_5.findings.yaml"
COMMITS = ("582e19ab0829eadb81104b36df154741ceec56b0", "eb1e4107ac078fa736735066c90b2ef457babab0", "997e74f4d7131f7c8bd63513879d3b474399ec24",
           "22265bb54f47ec520a7ca67078b9c5d1129ef48d", "5e3d34644ecd62b0fb87cd2f2b909a814b4f74d7")
DISAGG = "qwen3.5-fp4-gb300-dynamo-sglang-agentic-disagg"
NIGHTLY = "lmsysorg/sglang:nightly-dev-cu13-20260724-433429b1"     # the GB300 FP4 cells' image


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A bare repository with one commit per folder of inferencex-qwen35, and the module citing those commits."""
    return module_at_folder_commits(tmp_path_factory.mktemp("qwen"), MODULE, [(FILES / cited[:8], cited) for cited in COMMITS])


def _diff(capsys: pytest.CaptureFixture[str], module: Path, repo: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli(capsys, ["diff", "--cookbook", str(module), "--source", str(repo), "--format", "json", *extra])
    assert "Traceback" not in err, err
    doc = json.loads(out)
    assert doc["summary"]["exit"] == code
    return code, doc


def test_the_module_at_its_cited_commits_reports_exactly_the_judged_findings(source: tuple[Path, Path], capsys) -> None:
    repo, module = source
    code, doc = _diff(capsys, module, repo, "--allow-unpaired")
    expected = read_yaml_file(EXPECTED).data["cells"]
    want = {cell: ({"state": e["state"], "reason": e["reason"], "detail": e["detail"]} if e["state"] == "unpaired"
                   else {"state": e["state"], "failing": sorted(({"point": f["point"], "finding": f["finding"]} for f in e["failing"]),
                                                                key=lambda f: (f["point"], f["finding"]))})
            for cell, e in expected.items()}
    got = _by_cell(doc)
    for cell in got.values():
        cell.get("failing", []).sort(key=lambda f: (f["point"], f["finding"]))
    assert got == want
    assert all(f["why"] for e in expected.values() for f in e.get("failing", ()))     # every true finding is justified
    assert code == 1 and doc["summary"]["cells"] == {"checked": 16, "unpaired": 34}
    assert doc["summary"]["classes"]["mismatch"] == 7 and doc["summary"]["classes"]["prohibited"] == 7
    assert doc["summary"]["unpaired"] == {"commit-missing": 31, "recipe-missing": 3}


def test_a_dedicated_etcd_nats_node_gets_no_frontend(source: tuple[Path, Path], capsys) -> None:
    """srtctl (core/runtime.py `Nodes.from_slurm`, v1.0.10 to v1.0.68): with infra.etcd_nats_dedicated_node the
    first node runs etcd/NATS only, the first worker node is the head (nginx) and a frontend runs on each other
    worker node. The 1P1D recipes (2 worker nodes, num_additional_frontends 4) ran one frontend, not one per node."""
    assert frontend_layout(FrontendSpec(enable_multiple_frontends=True, num_additional_frontends=4), 2) == (1, True)
    repo, module = source
    _, doc = _diff(capsys, module, repo, "--config", DISAGG)
    counts = {(f["point"], f["cls"], f["recipe"], f["cookbook"]) for f in doc["findings"] if f["role"] == "frontend" and f["item"] == "count"}
    assert counts == {(f"1p1d-tp4-tp4/c{c}", "mismatch", "1", "2") for c in (8, 16, 32, 64, 96, 128)} | {("1p1d-tp2-tp2/c72", "mismatch", "1", "2")}


def _block(*args: tuple[str, ...]) -> Block:
    return Block(kind="worker", role="agg", title="agg worker", cmd="python3 -m sglang.launch_server", args=args)


def test_a_flag_the_next_release_has_is_not_known_to_stop_a_nightly() -> None:
    """The 2026-07-24 nightly lies between sglang 0.5.15.post1 and 0.5.16 (on PyPI a day later), which both lack
    --mamba-max-states-per-path (first released in 0.5.17); the verified GB300 runs passed it, so it is a
    bracket-only warning (a release can be cut before the day it is published), never a mismatch of diff.
    A flag no release has stays a certain unknown flag."""
    check = check_cell("c", NIGHTLY, [_block(("--mamba-max-states-per-path", "4"), ("--no-such-flag-anywhere",))], only_certain=True)
    found = {f.flag: (f.cls, f.certain) for f in check.findings if f.flag}
    assert found["--mamba-max-states-per-path"][0] == "bracket-only"
    assert found["--no-such-flag-anywhere"] == ("unknown-flag", True)
