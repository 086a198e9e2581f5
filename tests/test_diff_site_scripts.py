"""`diff` of a built site against a git repository of benchmark-script configs (issue 31's whole-tree gate).

The diff starts the scripts of every config it checks before comparing the first (`check.start_scripts`) and
trusts nothing the site or the build recorded of them: every published command is compared with what the diff's
own sandbox runs give, so a site edited in every copyable form at once (pages, cookbook.json, launch
scripts) still fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cookbookgen.cli import main

from conftest import CORPUS, git

CONFIGS = ("dsr1-fp8-h200-sglang", "dsv4-fp8-h200-vllm")      # SGLang and vLLM benchmark scripts of the excerpt
FLAG = "--mem-fraction-static 0.82"                            # the SGLang script's own value (dsr1_fp8_h200.sh)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A git repository of the excerpt's two script configs and the site built from it."""
    work = tmp_path_factory.mktemp("site-scripts")
    repo = work / "repo"
    repo.mkdir()
    for path in (CORPUS / "inferencex-843c6254").rglob("*"):
        if path.is_file():
            target = repo / path.relative_to(CORPUS / "inferencex-843c6254")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    for master in (repo / "configs").glob("*-master.yaml"):
        data = yaml.safe_load(master.read_text(encoding="utf-8"))
        master.write_text(yaml.safe_dump({k: v for k, v in data.items() if k in CONFIGS}, sort_keys=False), encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "configs", day="2026-01-01T00:00:00Z")
    site = work / "site"
    assert main(["build", "--source", str(repo), "--out", str(site), "--no-cache", "--date", "2026-01-01"]) == 0
    return repo, site


def _diff(capsys: pytest.CaptureFixture[str], site: Path, repo: Path, *more: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["diff", "--cookbook", str(site), "--source", str(repo), *more])
    return code, capsys.readouterr().out


def test_the_built_site_has_parity_with_its_scripts(built: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo, site = built
    code, out = _diff(capsys, site, repo)
    assert code == 0, out
    assert "3 checked, 0 unpaired" in out and "23 paired and compared" in out
    code, one = _diff(capsys, site, repo, "--config", CONFIGS[1])
    assert code == 0 and "2 checked, 0 unpaired" in one and "18 paired" in one, one


def test_a_site_edited_in_every_form_fails_against_the_scripts(built: tuple[Path, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Pages, Copy-all scripts, launch scripts and cookbook.json all say 0.9: only running the script shows 0.82."""
    repo, site = built
    edited = tmp_path / "site"
    changed = 0
    for path in site.rglob("*"):
        target = edited / path.relative_to(site)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        data = path.read_bytes()
        changed += FLAG.encode() in data
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.replace(FLAG.encode(), b"--mem-fraction-static 0.9"))
    assert changed > 3
    code, out = _diff(capsys, edited, repo)
    assert code == 1
    assert "arg --mem-fraction-static: different value (recipe 0.82; cookbook 0.9)" in out, out
