"""Shared fixtures: paths to the bundled example and the public corpus, and a rendering helper."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

from cookbookgen.pipeline import RenderedPoint, render_config_point
from cookbookgen.policy.rules import Policy, load_policy
from cookbookgen.recipes.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
SOURCE = DATA / "inferencex"
CORPUS = ROOT / "tests" / "data" / "corpus"   # public data files, sources in tests/data/SOURCES.md


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", help="run every property and fuzz test with all its examples (CI=true does too)")


FULL = False   # set once options are parsed, before any test module is imported


def pytest_configure(config: pytest.Config) -> None:
    global FULL
    FULL = bool(config.getoption("--full")) or os.environ.get("CI", "").lower() in ("true", "1")
    settings.register_profile("quick", max_examples=examples(100))   # property tests without their own count
    settings.load_profile("default" if FULL else "quick")


def pytest_report_header(config: pytest.Config) -> str:
    return "property and fuzz tests: " + ("every example (--full)" if FULL else "a tenth of their examples; --full (or CI=true) runs them all")


def examples(n: int) -> int:
    """How many examples a property or fuzz test draws: `n` in a full run, a tenth (at least 10) otherwise."""
    return n if FULL else max(10, n // 10)


@pytest.fixture(scope="session")
def policy() -> Policy:
    return load_policy()


@pytest.fixture(scope="session")
def bundled() -> Workspace:
    return Workspace(SOURCE)


@pytest.fixture(scope="session")
def render_bundled(bundled: Workspace, policy: Policy):
    cache: dict[tuple[str, str], RenderedPoint] = {}

    def run(key: str, point: str) -> RenderedPoint:
        if (key, point) not in cache:
            cache[(key, point)] = render_config_point(bundled, policy, key, point)
        return cache[(key, point)]

    return run


def bundled_keys(engine: str | None = None) -> list[str]:
    """The bundled manifest's config keys in manifest order; with `engine`, only those whose master entry's
    framework names it (`sglang` matches `sglang` and `dynamo-sglang`)."""
    doc = yaml.safe_load((DATA / "cookbook.yaml").read_text(encoding="utf-8"))
    keys = [c["key"] for p in doc["pages"] for c in p["configs"]]
    if engine is None:
        return keys
    entries = Workspace(SOURCE).entries()
    return [k for k in keys if engine in entries[k].framework.split("-")]


def sglang_manifest(folder: Path | None = None) -> Path:
    """A copy of the bundled manifest with only its SGLang configs (the AgentX module format expresses SGLang
    cells only), its source pointing at the bundled checkout; pages left empty are dropped. Written into
    `folder`, or once per session into a temporary folder."""
    if folder is None:
        return _session_sglang_manifest()
    doc = yaml.safe_load((DATA / "cookbook.yaml").read_text(encoding="utf-8"))
    keep = set(bundled_keys("sglang"))
    doc["source"] = str(SOURCE)
    doc["pages"] = [{**p, "configs": [c for c in p["configs"] if c["key"] in keep]} for p in doc["pages"]]
    doc["pages"] = [p for p in doc["pages"] if p["configs"]]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cookbook-sglang.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@functools.cache
def _session_sglang_manifest() -> Path:
    return sglang_manifest(Path(tempfile.mkdtemp(prefix="cookbookgen-sglang-")))


def master_keys() -> list[str]:
    """The bundled checkout's config keys as its master files list them (files in name order)."""
    files = sorted((SOURCE / "inferencex-e2e" / "configs").glob("*master*.yaml"))
    return [key for f in files for key in yaml.safe_load(f.read_text(encoding="utf-8"))]


def bundled_point_count() -> int:
    """How many benchmark points the bundled manifest's configs have: one per concurrency of each master row."""
    files = sorted((SOURCE / "inferencex-e2e" / "configs").glob("*master*.yaml"))
    entries = {k: v for f in files for k, v in yaml.safe_load(f.read_text(encoding="utf-8")).items()}
    return sum(len(row["conc-list"]) for key in bundled_keys() for blocks in entries[key]["scenarios"].values()
               for block in blocks for row in block["search-space"])


def git(repo: Path, *args: str, day: str | None = None) -> str:
    """Run git in `repo` as a fixed test identity (authored and committed at `day`, when given); its output."""
    env = {**os.environ, **({"GIT_AUTHOR_DATE": day, "GIT_COMMITTER_DATE": day} if day else {})}
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          capture_output=True, text=True, check=True, env=env)
    return done.stdout.strip()


def module_at_folder_commits(work: Path, module: Path, commits: list[tuple[Path, str]]) -> tuple[Path, Path]:
    """A bare repository with one commit per (folder, the commit a published module cites for it), in
    order, and a copy of the module citing those commits instead: a module checked at its cited commits."""
    tree, text = work / "tree", module.read_text(encoding="utf-8")
    tree.mkdir()
    git(tree, "init", "-q")
    for folder, cited in commits:
        for old in [p for p in tree.iterdir() if p.name != ".git"]:
            shutil.rmtree(old)
        shutil.copytree(folder, tree, dirs_exist_ok=True)
        git(tree, "add", "-A")
        git(tree, "commit", "-q", "-m", folder.name)
        assert cited in text
        text = text.replace(cited, git(tree, "rev-parse", "HEAD"))
    bare = work / "inferencex.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(tree), str(bare)], check=True)
    copy = work / module.name
    copy.write_text(text, encoding="utf-8")
    return bare, copy
