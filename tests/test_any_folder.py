"""Run from any folder, the commands find the bundled example beside the package (issue 23: from another
folder the main job said `<that folder>/data/inferencex:1: (top): no master config`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cookbookgen.cli import build_parser, main
from conftest import DATA, bundled_keys, sglang_manifest

AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current folder with no data/ in it."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def test_render_and_list(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--config", AGG, "--point", "tp4/c16", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["point"] == "tp4/c16"
    assert main(["list", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == str(DATA / "inferencex")


def test_build_then_diff_checks_the_manifest_and_the_site(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--out", str(elsewhere / "site")]) == 0
    assert (elsewhere / "site" / "index.html").is_file()
    capsys.readouterr()
    assert main(["diff", "--format", "json", "--cookbook", "site"]) == 0      # the README's main job
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["exit"] == 0 and [c["kind"] for c in doc["summary"]["cookbooks"]] == ["site"], "the site it was given, nothing else"


def test_export(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The bundled example has vLLM and TRT-LLM lanes the AgentX format cannot express: a clear error naming
    the first one, nothing written; its SGLang configs export."""
    first = next(k for k in bundled_keys() if k not in bundled_keys("sglang"))
    assert main(["export", "--out", "out/"]) == 2
    assert capsys.readouterr().err.startswith(f"cookbookgen: error: config {first}: its cells run behind router ")
    assert not (elsewhere / "out").exists()
    assert main(["export", "--cookbook", str(sglang_manifest(elsewhere / "in")), "--out", "out/"]) == 0
    assert (elsewhere / "out/agentx/deepseek-ai/deepseek-v4.1-flash.jsx").is_file()


def test_export_of_chosen_configs(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--config KEY` picks the configs to export (the SGLang ones of the bundled example); an unknown
    key names the manifest's configs and writes nothing."""
    sglang = bundled_keys("sglang")
    assert main(["export", *(a for key in sglang for a in ("--config", key)), "--format", "json", "--out", "module.json"]) == 0
    module = json.loads((elsewhere / "module.json").read_text())
    assert sorted({cell["configKey"] for cell in module["cells"]}) == sorted(sglang)
    capsys.readouterr()
    assert main(["export", "--config", "nope", "--out", "other.json"]) == 2
    assert "--config: unknown config of the cookbook 'nope'; expected one of: " in capsys.readouterr().err
    assert not (elsewhere / "other.json").exists()


def test_the_installed_command(elsewhere: Path) -> None:
    """As a user runs it: a new process whose current folder is elsewhere."""
    done = subprocess.run([sys.executable, "-m", "cookbookgen.cli", "list"], cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    listed = [line.split(":")[0] for line in done.stdout.splitlines() if line and not line.startswith(" ")]
    assert sorted(listed) == sorted(bundled_keys())


@pytest.mark.parametrize("command, option, default", [
    ("render", "--source", DATA / "inferencex"), ("list", "--source", DATA / "inferencex"), ("build", "--cookbook", DATA / "cookbook.yaml"),
    ("serve", "--cookbook", DATA / "cookbook.yaml"), ("export", "--cookbook", DATA / "cookbook.yaml"), ("diff", "--cookbook", DATA / "cookbook.yaml"),
])
def test_help_names_the_real_default(command: str, option: str, default: Path) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[union-attr]
    (action,) = [a for a in sub._actions if option in a.option_strings]
    assert f"the bundled example, {default}" in " ".join((action.help or "").split())


def test_a_wheel_carries_the_bundled_example_and_the_site_files(tmp_path: Path) -> None:
    """A regular (not editable) install finds the bundled example, templates and mkdocs.yml inside the
    package, with no checkout around it."""
    root = Path(__file__).resolve().parents[1]
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "mkdocs.yml", "src", "templates", "data"):
        if (root / name).is_dir():
            shutil.copytree(root / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(root / name, tree / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(tree)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("cookbookgen-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp_path / "installed"), str(wheel)], check=True, capture_output=True)
    shutil.rmtree(tree)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "installed")}
    run = subprocess.run([sys.executable, "-m", "cookbookgen.cli", "list", "--format", "json"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["source"] == str(tmp_path / "installed" / "cookbookgen" / "_project" / "data" / "inferencex")
    project = tmp_path / "installed" / "cookbookgen" / "_project"
    assert (project / "mkdocs.yml").is_file() and (project / "templates").is_dir() and (project / "data" / "cookbook.yaml").is_file()
