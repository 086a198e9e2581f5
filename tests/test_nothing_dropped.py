"""No recipe setting is dropped: every leaf of real v1 recipes (TRT-LLM, vLLM, SGLang) is in a command,
an env entry, an options file, or has a policy class with a reason, checked by `nothing_dropped`, which
does not use the renderer's code. The committed excerpt runs always; a whole srt-slurm checkout runs when
SRT_SLURM_CHECKOUT names one (e.g. NVIDIA/srt-slurm at c88ef731)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from cookbookgen.errors import CookbookError
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RenderContext, render

from nothing_dropped import effective, unmapped

DATA = Path(__file__).parent / "data" / "srtctl"
EXCERPT = sorted([*(DATA / "recipes").rglob("*.yaml"), *(DATA / "inferencex").rglob("*.yaml")])


def variants(path: Path) -> list[str | None]:
    raw = yaml.safe_load(path.read_text())
    if "base" in raw:
        out: list[str | None] = [k for k in raw if k.startswith("override_")]
        for key in (k for k in raw if k.startswith("zip_override_")):
            lengths = [len(v) for v in _lists(raw[key]) if len(v) != 1] or [1]
            out += [f"{key}[{i}]" for i in range(lengths[0])]
        return out
    if isinstance(raw.get("sweep"), dict):
        n = 1
        for values in raw["sweep"].values():
            n *= len(values)
        return [f"sweep[{i}]" for i in range(n)]
    return [None]


def _lists(node: object) -> list[list[object]]:
    if isinstance(node, dict):
        return [x for v in node.values() for x in _lists(v)]
    return [node] if isinstance(node, list) else []


def check(path: Path, selector: str | None) -> list[str] | None:
    """The unmapped leaves of a variant, or None when cookbookgen refuses it (a located error drops nothing)."""
    ref = str(path) + (f":{selector}" if selector else "")
    try:
        point = Workspace(Path(".")).bare_recipe(ref)
        deployment = render(point.recipe, point.typed, RenderContext("org/model", load_policy()))
    except CookbookError:
        return None
    return unmapped(effective(path, selector), deployment)


@pytest.mark.parametrize("path", EXCERPT, ids=lambda p: str(p.relative_to(DATA)))
def test_excerpt_renders_every_setting(path: Path) -> None:
    results = {sel: check(path, sel) for sel in variants(path)}
    assert all(r is not None for r in results.values()), "every variant of the excerpt renders"
    assert {sel: r for sel, r in results.items() if r} == {}


def test_the_check_catches_a_dropped_setting() -> None:
    """The check is not vacuous: a deployment with one flag removed fails it, naming the leaf."""
    path = DATA / "recipes/vllm/qwen3-32b/agg-round-robin.yaml"
    point = Workspace(Path(".")).bare_recipe(str(path))
    deployment = render(point.recipe, point.typed, RenderContext("org/model", load_policy()))
    blocks = [b.model_copy(update={"args": tuple(a for a in b.args if a[0] != "--max-model-len")}) if b.kind == "worker" else b
              for b in deployment.blocks]
    problems = unmapped(effective(path, None), deployment.model_copy(update={"blocks": tuple(blocks)}))
    assert [p.split(" =")[0] for p in problems] == ["backend.vllm_config.aggregated.max-model-len"]


@pytest.mark.skipif(not os.environ.get("SRT_SLURM_CHECKOUT"), reason="set SRT_SLURM_CHECKOUT to an srt-slurm checkout")
def test_whole_checkout_renders_every_setting() -> None:
    root = Path(os.environ["SRT_SLURM_CHECKOUT"])
    dropped, refused, passed = {}, 0, 0
    for path in sorted((root / "recipes").rglob("*.yaml")):
        for sel in variants(path):
            result = check(path, sel)
            if result is None:
                refused += 1
            elif result:
                dropped[f"{path.relative_to(root)}:{sel}"] = result
            else:
                passed += 1
    print(f"\n{passed} variants pass, {refused} refused with a located error, {len(dropped)} drop a setting")
    assert dropped == {}
