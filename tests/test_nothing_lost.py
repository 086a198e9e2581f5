"""Nothing lost: every leaf of every effective recipe is rendered or classified with a reason, and
changing any published setting changes the commands (no setting is ignored silently)."""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS, SOURCE

from cookbookgen.pipeline import render_point
from cookbookgen.policy.rules import CLASSES
from cookbookgen.recipes.bundle import apply_overrides
from cookbookgen.recipes.schema import PARALLEL_SIZE_ARGS, normalise
from cookbookgen.recipes.workspace import ResolvedPoint, Workspace

SOURCES = {"bundled": SOURCE, "corpus": CORPUS / "inferencex"}
RENDERED_SECTIONS = ("roles.", "frontend.args.", "frontend.env.", "services[")


def _points(name: str) -> list[ResolvedPoint]:
    ws = Workspace(SOURCES[name])
    out = []
    for entry in ws.entries().values():
        for row in entry.rows:
            for conc in row.concs:
                try:
                    out.append(ws.point(entry, row, conc))
                except Exception:  # recipes the corpus excerpt does not hold (see test_corpus)
                    continue
    return out


def _text(point: ResolvedPoint, policy) -> str:
    d = render_point(point, policy)
    return json.dumps([b.to_json() for b in d.blocks], sort_keys=True)


@pytest.mark.parametrize("source", list(SOURCES))
def test_every_leaf_has_one_class_and_a_reason(policy, source: str) -> None:
    points = _points(source)
    assert points
    for point in points:
        d = render_point(point, policy)
        paths = [s.path for s in d.settings if s.cls != "cluster-provided"]
        assert len(paths) == len(set(paths)), "a setting classified twice"
        for s in d.settings:
            assert s.cls in CLASSES and s.reason.strip(), s
        blocks = json.dumps([b.to_json() for b in d.blocks])
        for s in d.settings:
            name = s.path.rsplit(".", 1)[-1]
            if s.cls == "published" and (".args." in s.path or ".env." in s.path) and s.path.startswith(RENDERED_SECTIONS):
                assert name in blocks, f"{point.recipe.label}: {s.path} is published but not in any command"


def _mutations(point: ResolvedPoint, policy) -> list[str]:
    d = render_point(point, policy)
    out = []
    for s in d.settings:
        if s.cls != "published" or not s.path.startswith(RENDERED_SECTIONS) or "[" in s.path:
            continue
        if ".args." in s.path or ".env." in s.path:
            out.append(s.path)
    return out


def _value_at(data: dict, dotted: str) -> object:
    for key in dotted.split("."):
        data = data[key]
    return data


@pytest.mark.parametrize("source", list(SOURCES))
def test_changing_any_published_setting_changes_the_commands(policy, source: str) -> None:
    checked = 0
    for point in _points(source)[:8]:
        before = _text(point, policy)
        for path in _mutations(point, policy):
            value = "mutated-value-42"
            if path.rsplit(".", 1)[-1] in PARALLEL_SIZE_ARGS:       # must stay a whole number: 4 -> 04, same GPUs
                value = f'"0{_value_at(point.recipe.data, path)}"'
            recipe = apply_overrides(point.recipe, [f"{path}={value}"], [])
            normal, typed = normalise(recipe)
            changed = ResolvedPoint(point.entry, point.row, point.conc, normal, typed, point.recipe_path)
            assert _text(changed, policy) != before, f"{point.recipe.label}: changing {path} changed nothing"
            checked += 1
    assert checked > 100
