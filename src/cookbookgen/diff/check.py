"""Check a published cookbook against a checkout, config by config, and make the report: one flow for
every kind of input (`diff.sources.read_cookbook`). I/O only through `recipes.workspace` (the
checkout's master configs and recipes) and, for a manifest, the rendering of its points.

- A config's published points (a manifest renders them as the config is checked) are paired with
  the checkout's points and compared (`compare`; the points of a config share their work). Configs
  of the cookbook that the checkout lacks are listed as "not in checkout"; checkout configs the
  cookbook does not show are not its business and are skipped.
- A text or Markdown report is a head, one section per config (a function of that config's findings
  alone, `diff.report`) and a tail. With enough configs and cores, contiguous runs of configs are
  checked in forked worker processes, which send back their sections (and the cache entries they
  made); of several errors, the one of the earliest config is raised, as in one process.
- JSON, and a check with logs (`--logs`), need every finding at once: `check` gives them in one `DiffResult`.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple

from ..errors import CookbookError, Problem
from ..flags.check import FAILING, check_points
from ..policy.rules import Policy
from ..recipes.master import check_framework
from ..recipes.workspace import ResolvedPoint, Workspace
from ..text import unknown
from .compare import PointMemo, point_findings, stamped
from .expect import point_expect
from .model import Finding, Published, PublishedPoint
from .pairing import Pair, pair_config, variant_findings

if TYPE_CHECKING:
    from ..cells.cache import RenderCache


@dataclass(frozen=True)
class Source:
    """A cookbook's published points, config by config: `points(config)` gives the points and variants
    of one config (a manifest renders them then; other artifacts are read whole first)."""

    name: str
    kind: str
    configs: tuple[str, ...]
    points: Callable[[str], Published]
    notes: tuple[str, ...] = ()


def whole(published: Published) -> Source:
    """The source of a cookbook read whole (a module, cookbook JSON or site)."""
    by_config: dict[str, list[PublishedPoint]] = {}
    for point in published.points:
        by_config.setdefault(point.config, []).append(point)

    def points(config: str) -> Published:
        variants = tuple(v for v in published.variants if v.config == config)
        return Published(published.source, published.kind, tuple(by_config.get(config, ())), variants)
    return Source(published.source, published.kind, tuple(by_config), points, published.notes)


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


PointRun = tuple[str | None, list[Finding]]
"""Findings of one compared point, which are all that point's whatever point they name (they may be
shared with an earlier point of the config: `compare.point_findings`); or, with None, findings that
each name their own point (pairing, variants)."""


@dataclass(frozen=True)
class ConfigCheck:
    """One config of the cookbook checked: its point runs and then its variants, or why the checkout lacks it."""

    config: str
    runs: list[PointRun]
    variants: list[Finding]
    pairs: list[Pair]
    cells: tuple[str, ...]
    absent: str = ""


def flatten(runs: Iterable[PointRun]) -> list[Finding]:
    """The findings of `runs` in order, each naming its point."""
    return [f for point, found in runs for f in (found if point is None else stamped(found, point))]


def resolve_config(ws: Workspace, key: str) -> list[ResolvedPoint]:
    entry = ws.entry(key)
    return [ws.point(entry, row, conc) for row in entry.rows for conc in row.concs]


def shown_configs(source: Source, only: str | None) -> list[str]:
    """The configs the report shows: all, or only `only` (which the cookbook must have)."""
    if only is not None and only not in source.configs:
        raise CookbookError.at(source.name, 0, only, unknown("config", only, source.configs))
    return [c for c in source.configs if only is None or c == only]


def check_config(source: Source, ws: Workspace, policy: Policy, config: str) -> ConfigCheck:
    """Pair and compare the published points of `config` with the checkout's."""
    published = source.points(config)
    cells = tuple(dict.fromkeys(p.cell for p in published.points))
    why = _absence(ws, config)
    if why:
        return ConfigCheck(config, [], [], [], cells, why)
    try:
        check_framework(ws.entry(config))
    except CookbookError as exc:
        unverified = Finding(config, "", "cell", "point", config, "unverified", detail="not compared", reason=exc.problems[0].message)
        return ConfigCheck(config, [(None, [unverified])], variant_findings(published.variants), [], cells)
    pairs, findings = pair_config(config, list(published.points), resolve_config(ws, config))
    runs: list[PointRun] = [(None, findings + flag_mismatches(config, list(published.points)))]
    memo = PointMemo()
    for pair in pairs:
        expect = point_expect(pair.resolved, policy)
        runs.append((expect.point, point_findings(expect, pair.resolved.recipe, pair.published, policy, memo)))
    return ConfigCheck(config, runs, variant_findings(published.variants), pairs, cells)


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


def check(source: Source, ws: Workspace, policy: Policy, only: str | None = None) -> DiffResult:
    """Every finding of the cookbook at once: the point findings config by config, then the variants."""
    checks = []
    for config in source.configs:
        if only is None or config == only:
            checks.append(check_config(source, ws, policy, config))
        else:
            source.points(config)       # a manifest renders it all the same, so its errors surface
        ws.release_points()
    shown_configs(source, only)
    compared = [c for c in checks if not c.absent]
    findings = [f for c in compared for f in flatten(c.runs)] + [f for c in compared for f in c.variants]
    return DiffResult(source.name, source.kind, str(ws.checkout.root), tuple(c.config for c in compared), tuple(findings),
                      tuple((c.config, c.cells, c.absent) for c in checks if c.absent), source.notes,
                      tuple(p for c in compared for p in c.pairs))


# --- a text or Markdown report, config by config ------------------------------------------------------

class Section(NamedTuple):
    """A config's part of a text or Markdown report."""

    text: str
    points: int
    mismatches: int
    absent: tuple[str, tuple[str, ...], str] | None = None


@dataclass(frozen=True)
class _Job:
    """What every config's section needs (forked workers inherit it; it is never pickled)."""

    source: Source
    ws: Workspace
    policy: Policy
    only: str | None
    markdown: bool
    color: bool


def report_text(source: Source, ws: Workspace, policy: Policy, only: str | None, markdown: bool, color: bool,
                jobs: int | None = None, cache: RenderCache | None = None) -> tuple[str, int]:
    """The text (or Markdown) report of the cookbook and its exit status, made config by config."""
    from .report import TextRenderer, md_head, md_tail, text_head, text_tail

    job = _Job(source, ws, policy, only, markdown, color)
    sections = _sections(job, list(source.configs), jobs, cache)
    shown = [s for config, s in zip(source.configs, sections) if only is None or config == only]
    shown_configs(source, only)
    absent = [s.absent for s in shown if s.absent]
    points, mismatches = sum(s.points for s in shown), sum(s.mismatches for s in shown)
    configs = len(shown) - len(absent)
    exit_code = 1 if mismatches else 0
    body = "".join(s.text for s in shown)
    checkout = str(ws.checkout.root)
    if markdown:
        return md_head(source.name, source.kind, checkout) + body + md_tail(absent, source.notes, mismatches, points, configs), exit_code
    renderer = TextRenderer(color)
    return (text_head(renderer, source.name, source.kind, checkout) + body
            + text_tail(renderer, absent, source.notes, mismatches, points, configs, exit_code)), exit_code


def _section(job: _Job, config: str) -> Section:
    from .report import TextRenderer, md_config, text_config

    if job.only is not None and config != job.only:
        job.source.points(config)       # a manifest renders it all the same, so its errors surface
        return Section("", 0, 0)
    checked = check_config(job.source, job.ws, job.policy, config)
    if checked.absent:
        return Section("", 0, 0, (config, checked.cells, checked.absent))
    runs = checked.runs + [(None, checked.variants)]
    mismatches = sum(f.cls == "mismatch" for _, found in runs for f in found)
    if not any(found for _, found in runs):
        text = ""
    elif job.markdown:
        text = md_config(config, flatten(runs))
    else:
        text = text_config(TextRenderer(job.color), config, runs)
    return Section(text, len(checked.pairs), mismatches)


def _checked(job: _Job, configs: list[str]) -> list[Section]:
    out = []
    for config in configs:
        try:
            out.append(_section(job, config))
        finally:
            job.ws.release_points()     # a config's recipes and points are not needed by the next
    return out


MIN_PER_WORKER = 8        # configs; fewer are not worth a process
RUNS_PER_WORKER = 4       # runs of configs each worker takes, one after the other as it frees up


def _sections(job: _Job, configs: list[str], jobs: int | None, cache: RenderCache | None) -> list[Section]:
    """The sections of `configs`, in order: here, or in forked worker processes (at most `jobs`; default
    one per core, at most 4) when there are enough configs and the platform forks."""
    workers = min(jobs or min(os.cpu_count() or 1, 4), len(configs) // MIN_PER_WORKER)
    if workers < 2 or sys.platform != "linux" or multiprocessing.get_start_method(allow_none=True) not in (None, "fork"):
        return _checked(job, configs)
    size = -(-len(configs) // (workers * RUNS_PER_WORKER))
    runs = [configs[i:i + size] for i in range(0, len(configs), size)]
    global _FORKED
    job.ws.entries()          # what every worker needs, read once: the master configs and the changelog
    job.ws.changelog()
    _FORKED = (job, cache)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_worker, runs))
    finally:
        _FORKED = None
    out: list[Section] = []
    for sections, problems, deferred in results:
        if problems is not None:
            raise CookbookError(problems)
        if cache is not None:
            for kind, key, data in deferred:
                cache.put_bytes(kind, key, data)
        out += sections
    return out


_FORKED: tuple[_Job, RenderCache | None] | None = None


def _worker(configs: list[str]) -> tuple[list[Section], tuple[Problem, ...] | None, list[tuple[str, str, bytes]]]:
    """A worker's sections of a run of configs, the error that stopped it (its exception does not
    pickle) and the cache entries it made (the parent writes them)."""
    assert _FORKED is not None
    job, cache = _FORKED
    deferred: list[tuple[str, str, bytes]] = []
    if cache is not None:
        cache.deferred = deferred
    try:
        return _checked(job, configs), None, deferred
    except CookbookError as exc:
        return [], exc.problems, deferred
