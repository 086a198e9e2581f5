"""Shared fixtures: paths to the bundled example and the public corpus, and a rendering helper."""

from __future__ import annotations

from pathlib import Path

import pytest

from cookbookgen.pipeline import RenderedPoint, render_config_point
from cookbookgen.policy.rules import Policy, load_policy
from cookbookgen.recipes.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
SOURCE = DATA / "inferencex"
CORPUS = ROOT / "tests" / "data" / "corpus"   # public data files, sources in tests/data/SOURCES.md


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
