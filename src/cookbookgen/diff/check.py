"""Check a published cookbook against a checkout: pair its points, compare each pair, collect findings.

I/O only through `recipes.workspace` (reading the checkout's master configs and recipes), as in
`pipeline.py`. Configs of the cookbook that the checkout lacks are listed as "not in checkout";
checkout configs the cookbook does not show are not its business and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..errors import CookbookError
from ..flags.check import FAILING, check_points
from ..policy.rules import Policy
from ..recipes.master import check_framework
from ..recipes.workspace import ResolvedPoint, Workspace
from ..text import unknown
from .compare import PointMemo, point_findings, stamped
from .expect import point_expect
from .model import Finding, Published, PublishedPoint
from .pairing import Pair, pair_config, variant_findings


@dataclass(frozen=True)
class DiffResult:
    cookbook: str
    kind: str
    checkout: str
    configs: tuple[str, ...]
    findings: tuple[Finding, ...]
    not_in_checkout: tuple[tuple[str, tuple[str, ...], str], ...] = ()
    notes: tuple[str, ...] = ()
    pairs: tuple[Pair, ...] = field(default=(), compare=False, repr=False)

    @property
    def mismatches(self) -> list[Finding]:
        return [f for f in self.findings if f.is_mismatch]

    @property
    def exit_code(self) -> int:
        return 1 if self.mismatches else 0


def resolve_config(ws: Workspace, key: str) -> list[ResolvedPoint]:
    entry = ws.entry(key)
    return [ws.point(entry, row, conc) for row in entry.rows for conc in row.concs]


PointRun = tuple[str | None, list[Finding]]
"""Findings of one compared point, which are all that point's whatever point they name (they may be
shared with an earlier point of the config: `compare.point_findings`); or, with None, findings that
each name their own point (pairing, variants)."""


@dataclass(frozen=True)
class ConfigChecks:
    """The comparison of a cookbook's configs, before its findings are put in one list."""

    compared: tuple[str, ...]
    absent: tuple[tuple[str, tuple[str, ...], str], ...]
    pairs: tuple[Pair, ...]
    runs: dict[str, list[PointRun]]       # per compared config, in order
    variants: dict[str, list[Finding]]    # per compared config: its derived variants (never run)


def flatten(runs: Iterable[PointRun]) -> list[Finding]:
    """The findings of `runs` in order, each naming its point."""
    return [f for point, found in runs for f in (found if point is None else stamped(found, point))]


def check(published: Published, ws: Workspace, policy: Policy, only: str | None = None) -> DiffResult:
    checked = check_configs(published, ws, policy, only)
    findings = [f for key in checked.compared for f in flatten(checked.runs[key])]
    findings += [f for key in checked.compared for f in checked.variants.get(key, ())]
    return DiffResult(published.source, published.kind, str(ws.checkout.root), checked.compared, tuple(findings),
                      checked.absent, published.notes, checked.pairs)


def check_configs(published: Published, ws: Workspace, policy: Policy, only: str | None = None) -> ConfigChecks:
    """Pair and compare every config of `published` (or only `only`) with the checkout."""
    configs = [c for c in published.configs() if only is None or c == only]
    if only is not None and not configs:
        raise CookbookError.at(published.source, 0, only, unknown("config", only, published.configs()))
    runs: dict[str, list[PointRun]] = {}
    pairs: list[Pair] = []
    absent: list[tuple[str, tuple[str, ...], str]] = []
    by_config: dict[str, list[PublishedPoint]] = {}
    for point in published.points:
        by_config.setdefault(point.config, []).append(point)
    for key in configs:
        cells = tuple(dict.fromkeys(p.cell for p in by_config.get(key, ())))
        why = _absence(ws, key)
        if why:
            absent.append((key, cells, why))
            continue
        got_pairs, runs[key] = _check_config(by_config.get(key, []), ws, policy, key)
        pairs.extend(got_pairs)
    variants: dict[str, list[Finding]] = {}
    for f in variant_findings([v for v in published.variants if v.config in runs]):
        variants.setdefault(f.config, []).append(f)
    return ConfigChecks(tuple(runs), tuple(absent), tuple(pairs), runs, variants)


def flag_mismatches(key: str, points: list[PublishedPoint]) -> list[Finding]:
    """A mismatch per flag the engine version a cell pins would refuse (`flags.check`), once per cell and role."""
    checks = check_points((p.cell, p.image, p.blocks) for p in points)
    return [Finding(key, check.cell, f.block, "flag", f.flag, "mismatch", detail=f"{f.cls}: {f.detail}", reason=f"checked against {f.version}")
            for check in checks for f in check.findings if f.cls in FAILING]


def _absence(ws: Workspace, key: str) -> str:
    """Why the checkout cannot show config `key` ("" when it can): no master entry, or a recipe file it lacks."""
    entry = ws.entries().get(key)
    if entry is None:
        return "no master config entry"
    for row in entry.rows:
        try:
            ws.recipe_path(entry, row)
        except CookbookError as exc:
            return exc.problems[0].message
    return ""


def _check_config(points: list[PublishedPoint], ws: Workspace, policy: Policy, key: str) -> tuple[list[Pair], list[PointRun]]:
    try:
        check_framework(ws.entry(key))
    except CookbookError as exc:
        return [], [(None, [Finding(key, "", "cell", "point", key, "unverified", detail="not compared", reason=exc.problems[0].message)])]
    pairs, findings = pair_config(key, points, resolve_config(ws, key))
    runs: list[PointRun] = [(None, findings + flag_mismatches(key, points))]
    memo = PointMemo()
    for pair in pairs:
        expect = point_expect(pair.resolved, policy)
        runs.append((expect.point, point_findings(expect, pair.resolved.recipe, pair.published, policy, memo)))
    return pairs, runs
