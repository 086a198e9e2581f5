"""`cookbookgen diff --source` a git repository: each cell is read at the commit it cites (`prov.sha`),
through git objects only; a commit the repository lacks leaves its cells unpaired with that reason.

The repositories are built here from the corpus checkout (tests/data/corpus/inferencex) at two commits:
A is the corpus as it is, B drops the decode role's `enable-w4a4-mxfp4-megamoe: true` from the
disaggregated recipe (one of the public module's known differences, `test_diff_agentx.py`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cookbookgen.cli import main

from conftest import git

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
MODULE = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4.jsx"
DISAGG_RECIPE = "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv4/sglang/gb300-fp4/agentx/disagg-variants.yaml"
MEGAMOE = "        enable-w4a4-mxfp4-megamoe: true\n"
AGG, DISAGG = "dsv4-fp4-gb300-dynamo-sglang-agentic-agg", "dsv4-fp4-gb300-dynamo-sglang-agentic-disagg"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A clone whose working tree is at B (HEAD), and the ids of commits A and B."""
    root = tmp_path_factory.mktemp("git") / "inferencex"
    shutil.copytree(CORPUS / "inferencex", root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "A")
    a = git(root, "rev-parse", "HEAD")
    recipe = root / DISAGG_RECIPE
    text = recipe.read_text(encoding="utf-8")
    head, _, tail = text.rpartition(MEGAMOE)
    recipe.write_text(head + tail, encoding="utf-8")
    git(root, "commit", "-q", "-am", "B")
    return root, a, git(root, "rev-parse", "HEAD")


def _module(tmp_path: Path, shas: dict[str, str]) -> Path:
    """The public module with the `prov.sha` of the named cells replaced."""
    text = MODULE.read_text(encoding="utf-8")
    module = json.loads(text[text.index("{"):text.rindex("}") + 1])
    for cell in module["cells"]:
        cell["prov"]["sha"] = shas.get(cell["id"], cell["prov"]["sha"])
    path = tmp_path / "module.json"
    path.write_text(json.dumps(module), encoding="utf-8")
    return path


def _diff(capsys: pytest.CaptureFixture[str], module: Path, source: Path, *argv: str) -> tuple[int, dict]:
    code = main(["diff", "--cookbook", str(module), "--source", str(source), "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


def _state(repo: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in repo.rglob("*"))


def test_each_cell_is_read_at_the_commit_it_cites(repo: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, a, b = repo
    shas = {f"{AGG}#0": a[:8], **{f"{DISAGG}#{i}": b for i in range(4)}}
    before = _state(root)
    code, doc = _diff(capsys, _module(tmp_path, shas), root)
    assert _state(root) == before, "nothing in the repository was written"
    cells = {c["cell"]: c for c in doc["cells"]}
    assert cells[f"{AGG}#0"]["state"] == "checked" and cells[f"{AGG}#0"]["tree"] == f"{root}@{a}"
    assert cells[f"{DISAGG}#1"]["state"] == "checked" and cells[f"{DISAGG}#1"]["tree"] == f"{root}@{b}"
    megamoe = {f["point"] for f in doc["findings"] if f["item"] == "--enable-w4a4-mxfp4-megamoe" and f["cls"] == "mismatch"}
    assert megamoe == set(), "commit B dropped it from the recipe"
    # every other cell cites a commit this repository does not hold
    unpaired = {c["cell"]: (c["reason"], c["detail"], c["commit"]) for c in doc["cells"] if c["state"] == "unpaired"}
    assert len(unpaired) == 22 and unpaired[f"{DISAGG}#3"][0] == "selector-missing"
    missing = {k: v for k, v in unpaired.items() if k != f"{DISAGG}#3"}
    assert {reason for reason, _, _ in missing.values()} == {"commit-missing"} and all(d == c for _, d, c in missing.values())
    assert code == 1 and doc["summary"]["why"].endswith("22 unpaired cell(s)")

    code, doc = _diff(capsys, _module(tmp_path, {**shas, **{f"{DISAGG}#{i}": a for i in range(4)}}), root)
    megamoe = {f["point"] for f in doc["findings"] if f["item"] == "--enable-w4a4-mxfp4-megamoe" and f["cls"] == "mismatch"}
    assert megamoe == {"1p1d-dep8-dep16/c480", "2p1d-dep8-dep16/c960", "3p1d-dep8-dep16/c1440"}, "read at A, not at the working tree (B)"


def test_a_bare_mirror_gives_the_same_result_and_a_plain_folder_todays(repo: tuple[Path, str, str], tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    root, a, b = repo
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(bare)], check=True)
    module = _module(tmp_path, {f"{AGG}#0": a, **{f"{DISAGG}#{i}": b for i in range(4)}})
    clone = _diff(capsys, module, root)
    mirror = _diff(capsys, module, bare)
    strip = [{k: v for k, v in c.items() if k != "tree"} for c in clone[1]["cells"]]
    assert mirror[0] == clone[0] and [{k: v for k, v in c.items() if k != "tree"} for c in mirror[1]["cells"]] == strip
    assert mirror[1]["findings"] == clone[1]["findings"]
    code, text = main(["diff", "--cookbook", str(module), "--source", str(CORPUS / "inferencex")]), capsys.readouterr().out
    assert code == 1 and "  cells     4 checked, 22 unpaired" in text, "a plain folder is read for every cell, whatever it cites"


def test_the_text_report_names_the_repository_and_each_unpaired_cells_commit(repo: tuple[Path, str, str], tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    root, a, _ = repo
    module = _module(tmp_path, {f"{AGG}#0": a})
    assert main(["diff", "--cookbook", str(module), "--source", str(root), "--config", AGG]) == 1
    out = capsys.readouterr().out
    assert f"  cookbook  {module} (AgentX module) against {root} (git)\n" in out
    assert main(["diff", "--cookbook", str(module), "--source", str(root), "--config", DISAGG]) == 1
    sha = "34d06e54c7614bb33d2a271b010ffde3ce3fa563"
    assert f"unpaired {DISAGG}#0 ({DISAGG}): commit-missing: {sha} [{root}@{sha}]" in capsys.readouterr().out
