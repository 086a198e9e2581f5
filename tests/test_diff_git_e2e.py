"""`cookbookgen diff` of the whole published GLM-5.2 module against InferenceX files at the commits its
cells cite (v1 provenance: each point's `sha` and `recipeUrl`).

The repository is built here, one commit per cited InferenceX commit, from the files read at those
commits (tests/data/corpus/inferencex-git, sources beside them); the module's citations of the two
commits are pointed at the new commits. The module's 15 other cells cite commits this repository does not
hold. Every finding pinned below was checked by hand against the recipe and the module; the same run against
a mirror of InferenceX itself (2,050 commits, up to 2026-08-22) gives the same cells, states and findings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cookbookgen.cli import main

from conftest import module_at_folder_commits

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
MODULE = CORPUS / "sglang-cookbook" / "agentx" / "zai-org" / "glm-5.2.jsx"
COMMITS = {"5921b0f0": "5921b0f0451ea6352875935cd3f7e7aae1a20e40", "6130a8b5": "6130a8b5b671be6fc9695e8d159197f2cd275482"}
KEY = "glm5.2-fp4-gb200-dynamo-sglang-agentic"
NEXTN = "SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE"

# (config, point label, role, item, recipe value, cookbook value), checked by hand:
# - frontend count: srtctl puts nginx on the head node and one frontend on each other node (at most
#   1 + num_additional_frontends, 9 by default); these cells run on 2, 6 or 8 nodes, so 1, 5 or 7 frontends,
#   while the module starts nodes + 1 (3, 7, 9);
# - every recipe sets SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE=1 on the agg or decode role: prohibited by the policy (the
#   run used it; class `prohibited`, which fails the run, listed apart from the mismatches in PROHIBITED);
# - the 2P1D decode role passes `--deepep-config /configs/deepep_config.json` (recipe line 167); the module
#   writes `deepep_config.json`.
AGG_POINTS = {f"{KEY}-agg": (1, 2, 4, 8, 12, 16), f"{KEY}-mtp-agg": (2, 4, 8)}
DISAGG_POINTS = {(f"{KEY}-disagg", 10): "1", (f"{KEY}-disagg", 12): "1", (f"{KEY}-mtp", 45): "7",
                 (f"{KEY}-mtp", 48): "5", (f"{KEY}-mtp", 128): "7"}
EXPECTED = {
    *[(config, f"c{c}", "frontend", "count", "1", "3") for config, concs in AGG_POINTS.items() for c in concs],
    *[(config, f"c{c}", "frontend", "count", frontends, str(int(frontends) + 2)) for (config, c), frontends in DISAGG_POINTS.items()],
    (f"{KEY}-mtp", "c128", "decode", "--deepep-config", "/configs/deepep_config.json", "deepep_config.json"),
}
PROHIBITED = {*[(config, f"c{c}", "agg", NEXTN, "1", None) for config, concs in AGG_POINTS.items() for c in concs],
              *[(config, f"c{c}", "decode", NEXTN, "1", None) for config, c in DISAGG_POINTS]}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A bare repository with one commit per folder of inferencex-git, and the module citing those commits."""
    return module_at_folder_commits(tmp_path_factory.mktemp("e2e"), MODULE,
                                    [(CORPUS / "inferencex-git" / folder, cited) for folder, cited in COMMITS.items()])


def _label(point: str) -> str:
    return point.rsplit("/", 1)[-1]


def test_every_cell_is_checked_at_its_commit_or_unpaired_with_a_true_reason(source: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    bare, module = source
    code = main(["diff", "--cookbook", str(module), "--source", str(bare), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["summary"]["exit"] == 1
    cells = {c["cell"]: c for c in report["cells"]}
    assert len(cells) == 21
    checked = {c for c, s in cells.items() if s["state"] == "checked"}
    assert checked == {f"{KEY}-agg#0", f"{KEY}-mtp-agg#0", f"{KEY}-disagg#0", f"{KEY}-mtp#0", f"{KEY}-mtp#1", f"{KEY}-mtp#2"}
    for cell, state in cells.items():
        if cell not in checked:
            assert (state["state"], state["reason"]) == ("unpaired", "commit-missing"), cell
            assert len(state["commit"]) == 40 and state["commit"] not in COMMITS.values()
    paired = sum(len(s["points"]) for s in cells.values())
    assert paired == 14
    found = {cls: {(f["config"], _label(f["point"]), f["role"], f["item"], f.get("recipe"), f.get("cookbook"))
                   for f in report["findings"] if f["cls"] == cls} for cls in ("mismatch", "prohibited")}
    assert found == {"mismatch": EXPECTED, "prohibited": PROHIBITED}


def test_allow_unpaired_still_fails_on_the_mismatches_and_a_cell_can_be_checked_alone(source: tuple[Path, Path],
                                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    bare, module = source
    assert main(["diff", "--cookbook", str(module), "--source", str(bare), "--allow-unpaired"]) == 1
    capsys.readouterr()
    code = main(["diff", "--cookbook", str(module), "--source", str(bare), "--cell", f"{KEY}-mtp#2", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [(c["cell"], c["state"]) for c in report["cells"]] == [(f"{KEY}-mtp#2", "checked")]
    assert {(f["role"], f["item"], f["cls"]) for f in report["findings"] if f["cls"] in ("mismatch", "prohibited")} == {
        ("frontend", "count", "mismatch"), ("decode", NEXTN, "prohibited"), ("decode", "--deepep-config", "mismatch")}


def test_the_text_report_leads_with_the_verdict(source: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    bare, module = source
    main(["diff", "--cookbook", str(module), "--source", str(bare)])
    head = capsys.readouterr().out.splitlines()[:5]
    assert head[0].startswith("cookbookgen diff: FAIL (exit 1): 15 mismatch(es), 14 prohibited setting(s), 15 unpaired cell(s); compared ")
    assert head[2] == "  cells     6 checked, 15 unpaired (15 commit-missing)"
    assert head[3] == "  points    14 paired and compared"


# A false claim in one cell's label or install step: (cell, text in that cell, its replacement, the finding items it adds).
CLAIMS = [
    (f"{KEY}-agg#0", '"label": "Agg TP8 (2 nodes)"', '"label": "Agg TP8 (3 nodes)"', "label agg nodes"),
    (f"{KEY}-mtp#2", '"label": "Disagg 2P1D · prefill DEP8 (2 nodes)', '"label": "Disagg 2P1D · prefill DEP4 (2 nodes)',
     "label prefill GPUs", "label prefill"),
    (f"{KEY}-mtp#1", "dynamo/commit/71eb001e", "dynamo/commit/81eb001e", "install"),
]


@pytest.mark.parametrize(("cell", "old", "new", "items"), [(*c[:3], set(c[3:])) for c in CLAIMS], ids=[c[3] for c in CLAIMS])
def test_a_false_label_or_install_claim_is_a_mismatch(source: tuple[Path, Path], tmp_path: Path, cell: str, old: str, new: str,
                                                       items: set[str], capsys: pytest.CaptureFixture[str]) -> None:
    bare, module = source
    text = module.read_text(encoding="utf-8")
    start = text.index(f'"id": "{cell}"')
    end = text.index('"id": "', start + 1)
    assert old in text[start:end]
    mutated = tmp_path / "glm-5.2.jsx"
    mutated.write_text(text[:start] + text[start:end].replace(old, new) + text[end:], encoding="utf-8")
    argv = ["diff", "--source", str(bare), "--cell", cell, "--format", "json"]
    before = {f["item"] for f in json.loads(_run(capsys, *argv, "--cookbook", str(module)))["findings"] if f["cls"] == "mismatch"}
    after = {f["item"] for f in json.loads(_run(capsys, *argv, "--cookbook", str(mutated)))["findings"] if f["cls"] == "mismatch"}
    assert after - before == items


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main(list(argv))
    return capsys.readouterr().out


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("https://github.com/SemiAnalysisAI/InferenceX/blob/", "https://example.com/", "expected a GitHub blob URL"),
    ("/blob/5921b0f0451ea6352875935cd3f7e7aae1a20e40/", "/blob/6130a8b5b671be6fc9695e8d159197f2cd275482/", "names commit 6130a8b5"),
], ids=["not-a-blob-url", "other-commit"])
def test_a_recipe_url_that_is_not_the_points_citation_is_bad_input(tmp_path: Path, old: str, new: str, problem: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "glm-5.2.jsx"
    module.write_text(MODULE.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    assert main(["diff", "--cookbook", str(module), "--source", str(CORPUS / "inferencex")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cookbookgen: error: {module}:") and ".recipeUrl: " in err and problem in err and "\n" not in err


def test_hicache_size_is_compared_as_runner_dependent(source: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--hicache-size is sized to the benchmark runner's host memory (the cookbook's note says to size it to the
    reader's nodes): another size in the cookbook is its choice (placeholder); leaving it out is still a mismatch."""
    bare, module = source
    text = module.read_text(encoding="utf-8")
    argv = ["diff", "--source", str(bare), "--format", "json"]
    sizes = [(f["point"], f["cls"], f["detail"], f.get("cookbook"))
             for f in json.loads(_run(capsys, *argv, "--cookbook", str(module)))["findings"] if f["item"] == "--hicache-size"]
    assert {(cls, detail) for _, cls, detail, _ in sizes} == {("match", "same value")}
    other = tmp_path / "other.jsx"
    resized = re.sub(r'"--hicache-size": \["\d+"\]', '"--hicache-size": ["64"]', text)      # in a patch's diff
    other.write_text(re.sub(r'\["--hicache-size", "\d+"\]', '["--hicache-size", "64"]', resized), encoding="utf-8")
    found = [f for f in json.loads(_run(capsys, *argv, "--cookbook", str(other)))["findings"] if f["item"] == "--hicache-size"]
    changed = [f for f in found if f["recipe"] != "64"]       # one recipe sizes it 64 already
    assert len(found) == len(sizes) and len(changed) > 10
    assert {(f["cls"], f["detail"], f["cookbook"]) for f in changed} == {("placeholder", "runner-dependent value", "64")}
    assert all("free host memory" in f["reason"] for f in changed)
    gone = tmp_path / "gone.jsx"
    gone.write_text(re.sub(r'\["--hicache-size", "\d+"\],', "", text), encoding="utf-8")
    found = [f for f in json.loads(_run(capsys, *argv, "--cookbook", str(gone)))["findings"] if f["item"] == "--hicache-size"]
    assert ("mismatch", "missing from the cookbook") in {(f["cls"], f["detail"]) for f in found}   # (a point's patch may set it again)
