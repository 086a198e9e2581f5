"""The diff's driver: runs pair -> expect -> compare -> report for a published cookbook against a checkout, config by config, and makes the report: one flow for
every kind of input (`diff.sources.read_cookbook`). I/O only through `recipes.workspace` (the
checkout's master configs and recipes) and, for a manifest, the rendering of its points.

- A config's published points (a manifest renders them as the config is checked) are paired with
  the checkout's points and compared (`compare`; the points of a config share their work). Every
  published cell ends `checked` or `unpaired` with one reason (`model.CellState`); checkout configs
  the cookbook does not show are not its business and are skipped. `Source.cell` narrows to one cell.
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
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable

from ..errors import CookbookError, Problem
from ..flags.check import FAILING, check_points
from ..policy.rules import Policy
from ..recipes.load import dotted
from ..recipes.master import check_framework
from ..recipes.view import ObjectMissing
from ..recipes.workspace import ResolvedPoint, Workspace
from ..render.model import Block
from ..text import unknown
from .claims import claim_findings
from .compare import PointMemo, point_findings, stamped
from .expect import point_expect, uncompared_frontend
from .report import cookbook_part, md_config, text_config
from .result import DiffResult, PointRun
from .model import EXTRA, MISSING, CellState, Source, Finding, PublishedPoint, Tally, UnpairedReason
from .pairing import Pair, pair_config, variant_findings
from .words import parsed_args

if TYPE_CHECKING:
    from ..cells.cache import RenderCache


@dataclass(frozen=True)
class ConfigCheck:
    """One config of the cookbook checked: its point runs, its variants and how each of its cells ended."""

    config: str
    runs: list[PointRun]
    variants: list[Finding]
    pairs: list[Pair]
    cells: tuple[CellState, ...]
    absent: bool = False


def flatten(runs: Iterable[PointRun]) -> list[Finding]:
    """The findings of `runs` in order, each naming its point."""
    return [f for point, found in runs for f in (found if point is None else stamped(found, point))]


def resolve_config(ws: Workspace, key: str, refused: dict[str, str] | None = None) -> list[ResolvedPoint]:
    """The config's points; with `refused`, a point that cannot be resolved is put there (point id ->
    its located reason) instead of stopping the check."""
    entry = ws.entry(key)
    ws.prefetch(entry)
    out = []
    for row in entry.rows:
        for conc in row.concs:
            try:
                out.append(ws.point(entry, row, conc))
            except ObjectMissing:
                raise
            except CookbookError as exc:
                if refused is None:
                    raise
                refused[f"{row.slug}/c{conc}"] = str(exc.problems[0])
    return out


def _known_config(source: Source, only: str | None) -> None:
    """`--config`, when given, must name a config of the cookbook."""
    if only is not None and only not in source.configs:
        raise CookbookError.at(source.name, 0, only, unknown("config", only, source.configs))


@dataclass(frozen=True)
class GitTrees:
    """A git repository as the checkout: `at(commit)` gives the workspace of the files at that commit and
    how reports name it (no workspace when the repository lacks the commit); `head` is HEAD's."""

    name: str
    at: Callable[[str], tuple[Workspace | None, str]]
    head: Workspace


def check_config(source: Source, ws: Workspace, policy: Policy, config: str, trees: GitTrees | None = None) -> ConfigCheck:
    """Pair and compare the published points of `config` (of `source.cell` only, when set) with the checkout's,
    or, with `trees`, each cell's points with the checkout at the commit the cell cites."""
    published = source.points(config)
    points = [p for p in published.points if source.cell in (None, p.cell)]
    variants = variant_findings([v for v in published.variants if source.cell in (None, v.cell)])
    groups: dict[str, list[PublishedPoint]] = {}
    for p in points:
        groups.setdefault((p.commit or "") if trees else "", []).append(p)
    whole = len(groups) == 1 and source.cell is None
    parts = [_check_points(source, *_tree(ws, trees, commit), policy, config, group, commit, whole) for commit, group in groups.items()]
    copies: list[PointRun] = [(None, list(published.findings))] if published.findings else []   # a site's forms that disagree
    not_rendered = tuple(CellState(source.name, config, f"{config} {point}" if point else config, "unpaired", "not-rendered", reason)
                         for _, point, reason in published.refused if source.cell is None)
    return ConfigCheck(config, [r for c in parts for r in c.runs] + copies, variants, [p for c in parts for p in c.pairs],
                       tuple(s for c in parts for s in c.cells) + not_rendered, bool(parts) and all(c.absent for c in parts))


def as_parsed(point: PublishedPoint) -> PublishedPoint:
    """The point with its args as the parser reads them (`--flag=value` is `--flag value`); itself when they are."""
    blocks = tuple(map(_parsed, point.blocks))
    return point if all(new is old for new, old in zip(blocks, point.blocks)) else replace(point, blocks=blocks)


def _parsed(block: Block) -> Block:
    args = parsed_args(block.args)
    return block if args == block.args else block.model_copy(update={"args": args})


def _tree(ws: Workspace, trees: GitTrees | None, commit: str) -> tuple[Workspace | None, str]:
    if trees is None:
        return ws, ws.checkout.name
    return trees.at(commit) if commit else (None, trees.name)


def _check_points(source: Source, ws: Workspace | None, tree: str, policy: Policy, config: str, points: list[PublishedPoint],
                  commit: str, whole: bool) -> ConfigCheck:
    """Check `points` (of cells citing `commit`) against the checkout `ws` (None: the repository lacks the commit)."""
    ids = tuple(dict.fromkeys(p.cell for p in points))
    why: tuple[UnpairedReason, str] | None = ("commit-missing", commit or "the cell cites no commit")
    resolved: list[ResolvedPoint] = []
    refused: dict[str, str] = {}       # point id -> why the checkout cannot render it
    if ws is not None:
        try:
            why = _unpaired(ws, config)
            resolved = resolve_config(ws, config, refused) if why is None else []
        except ObjectMissing as exc:    # a git source's tree or blob: this commit's cells cannot be checked
            why = ("object-missing", exc.detail)
        except CookbookError as exc:    # an unreadable master entry or recipe stops this config's cells only
            why = ("recipe-refused", str(exc.problems[0]))
        if why is None and refused and not resolved:    # e.g. a refused script: no point of the config renders
            why = ("recipe-refused", next(iter(refused.values())))
        uncompared = sorted({k for k in map(uncompared_frontend, resolved) if k})
        if why is None and uncompared:                  # never compared as another frontend's deployment
            why = ("framework-unsupported", f"diff does not compare deployments behind frontend type {', '.join(uncompared)} yet "
                                            "(no `frontends` entry in diff/synthesized.yaml): their cells cannot be checked")
    if why is not None or ws is None:
        reason, detail = why or ("commit-missing", commit)
        return ConfigCheck(config, [], [], [], tuple(CellState(source.name, config, c, "unpaired", reason, detail, commit, tree) for c in ids), True)
    pairs, findings = pair_config(config, points if source.rendered_here else [as_parsed(p) for p in points], resolved)
    if not whole:         # the config's other cells may show the points these lack
        findings = [f for f in findings if f.detail != MISSING]
    # a published point the checkout cannot render: its reason (not `extra in the cookbook`)
    unrendered = [Finding(config, p.point_id, "point", "point", p.point_id, "mismatch", detail="the checkout cannot render this point",
                          reason=refused[p.point_id]) for p in points if p.point_id in refused]
    explained = {(p.cell, f"c{c}") for p in points if p.point_id in refused for c in p.concs}
    findings = [f for f in findings if not (f.detail == EXTRA and (f.item, f.point) in explained)] + unrendered
    runs: list[PointRun] = [(None, findings + flag_mismatches(config, points) + shadowed_keys(ws, config, resolved))]
    memo = PointMemo()
    items = {id(p.published): min(_row_index(q) for q in pairs if q.published is p.published) for p in pairs}
    for pair in pairs:
        expect = point_expect(pair.resolved, policy)
        claims = claim_findings(expect, pair.resolved.recipe.data, pair.published, items[id(pair.published)])
        runs.append((expect.point, point_findings(expect, pair.resolved.recipe, pair.published, policy, memo) + claims))
    selectors = {r.recipe.selector for r in resolved}
    cells = tuple(_cell_state(CellState(source.name, config, c, "checked", commit=commit, tree=tree), [p for p in pairs if p.published.cell == c],
                              {p.override for p in points if p.cell == c and p.override not in selectors}) for c in ids)
    return ConfigCheck(config, runs, [], pairs, cells)


def shadowed_keys(ws: Workspace, config: str, resolved: list[ResolvedPoint]) -> list[Finding]:
    """A `shadowed` finding per duplicate key of the config's recipe files (a note: the compared value is the last,
    as srtctl reads it; `classes.yaml`), once per file and key."""
    files = {p.recipe.file for p in resolved}
    return [Finding(config, "", "job", "setting", dotted(s.path), "shadowed", path=dotted(s.path), where=f"{file}:{s.last}",
                    detail=f"duplicate key; the value at line {s.last} is used and the one at line {s.first} is ignored "
                           "(srtctl's yaml.safe_load keeps the last)")
            for file, s in ws.shadowed(files)]


def _row_index(pair: Pair) -> int:
    """The master search-space row a paired point comes from (what a module's `item` names)."""
    return pair.resolved.row.index if pair.resolved.row else 0


def _cell_state(state: CellState, pairs: list[Pair], unknown_overrides: set[str | None]) -> CellState:
    """A cell is checked when a point of it paired; unpaired when none did: because it cites overrides no
    master row uses, or because no master row (or more than one) serves each of its points."""
    if not pairs and unknown_overrides and None not in unknown_overrides:
        return replace(state, state="unpaired", reason="selector-missing", detail=", ".join(sorted(map(str, unknown_overrides))))
    if not pairs:
        return replace(state, state="unpaired", reason="no-point-paired", detail="each point's reason is among its config's findings")
    return replace(state, points=tuple(p.resolved.point_id for p in pairs), recipe=", ".join(dict.fromkeys(p.resolved.recipe.label for p in pairs)))


def flag_mismatches(key: str, points: list[PublishedPoint]) -> list[Finding]:
    """A mismatch per flag the engine version a cell pins would refuse (`flags.check`), once per cell and role."""
    checks = check_points(((p.cell, p.image, p.blocks, p.install or ()) for p in points), only_certain=True)
    return [Finding(key, check.cell, f.block, "flag", f.flag, "mismatch", detail=f"{f.cls}: {f.detail}", reason=f"checked against {f.version}")
            for check in checks for f in check.findings if f.cls in FAILING and f.certain]


def _unpaired(ws: Workspace, key: str) -> tuple[UnpairedReason, str] | None:
    """Why the checkout cannot show config `key` (None when it can), and the key or path involved."""
    entry = ws.entries().get(key)
    if entry is None:
        return "no-master-entry", key
    problems = []
    try:
        check_framework(entry)
        for row in entry.rows:      # a row whose recipe is missing leaves only its own points unrendered
            try:
                ws.recipe_path(entry, row)
                return None
            except ObjectMissing:
                raise
            except CookbookError as exc:
                problems.append(exc.problems[0])
    except ObjectMissing:
        raise
    except CookbookError as exc:
        problems.append(exc.problems[0])
    if not problems:
        return None
    return ("framework-unsupported" if problems[0].key_path.endswith("framework") else "recipe-missing"), problems[0].message


def check(source: Source, ws: Workspace, policy: Policy, only: str | None = None, trees: GitTrees | None = None) -> DiffResult:
    """Every finding of the cookbook at once: the point findings config by config, then the variants."""
    checks = []
    for config in source.configs:
        if only is None or config == only:
            checks.append(check_config(source, ws, policy, config, trees))
        else:
            source.points(config)       # a manifest renders it all the same, so its errors surface
        ws.release_points()
    _known_config(source, only)
    _known_cell(source, [c.cells for c in checks])
    compared = [c for c in checks if not c.absent and c.cells]
    findings = [f for c in compared for f in flatten(c.runs)] + [f for c in compared for f in c.variants]
    return DiffResult(source.name, source.kind, trees.name if trees else ws.checkout.name, tuple(c.config for c in compared), tuple(findings),
                      tuple(cell for c in checks for cell in c.cells), source.notes, tuple(p for c in compared for p in c.pairs))


def _known_cell(source: Source, cells: Iterable[Iterable[CellState]]) -> None:
    if source.cell is not None and not any(cs for cs in cells):
        raise CookbookError.at(source.name, 0, "--cell", f"no cell {source.cell!r} in the cookbook (or in the --config shown)")


# --- a text or Markdown report, config by config ------------------------------------------------------

Section = tuple[str, Tally]
"""A config's part of a text or Markdown report, and what the verdict counts of it."""


@dataclass(frozen=True)
class _Job:
    """What every config's section needs (forked workers inherit it; it is never pickled)."""

    source: Source
    ws: Workspace
    policy: Policy
    only: str | None
    markdown: bool
    color: bool
    verbose: bool
    trees: GitTrees | None


def report_text(source: Source, ws: Workspace, policy: Policy, only: str | None, markdown: bool, color: bool,
                jobs: int | None = None, cache: RenderCache | None = None, verbose: bool = False,
                trees: GitTrees | None = None) -> tuple[str, Tally]:
    """The text (or Markdown) details of the cookbook and what its verdict counts, made config by config."""

    job = _Job(source, ws, policy, only, markdown, color, verbose, trees)
    sections = _sections(job, list(source.configs), jobs, cache)
    shown = [s for config, s in zip(source.configs, sections) if only is None or config == only]
    _known_config(source, only)
    _known_cell(source, [counted.cells for _, counted in shown])
    tally = sum((counted for _, counted in shown), Tally())
    body = "".join(text for text, _ in shown)
    checkout = trees.name if trees else ws.checkout.name
    return cookbook_part(source.name, source.kind, checkout, body, tally.unpaired, source.notes, markdown, color), tally


def _section(job: _Job, config: str) -> Section:

    if job.only is not None and config != job.only:
        job.source.points(config)       # a manifest renders it all the same, so its errors surface
        return "", Tally()
    checked = check_config(job.source, job.ws, job.policy, config, job.trees)
    if checked.absent or not checked.cells:
        return "", Tally(checked.cells)
    runs = checked.runs + [(None, checked.variants)]
    classes = Counter[str](f.cls for _, found in runs for f in found)
    if job.markdown:
        text = md_config(config, flatten(runs), folded=not (classes["mismatch"] or classes["prohibited"]))
    elif not (classes["mismatch"] or classes["prohibited"] or classes["shadowed"] or job.verbose):
        text = ""
    else:
        text = text_config(job.color, config, runs, job.verbose)
    return text, Tally(checked.cells, len(checked.pairs), classes)


def _checked(job: _Job, configs: list[str]) -> list[Section]:
    out = []
    running = start_scripts(job.source, job.ws, job.trees, configs, job.only)
    try:
        for config in configs:
            try:
                out.append(_section(job, config))
            finally:
                job.ws.release_points()     # a config's recipes and points are not needed by the next
    finally:
        for ws in running:
            ws.stop_scripts()
    return out


def start_scripts(source: Source, ws: Workspace, trees: GitTrees | None, configs: Iterable[str], only: str | None = None) -> list[Workspace]:
    """Start the benchmark scripts of the configs to check, in order, in the background (`Workspace.prefetch`),
    so that their sandboxes run while the configs before them are compared; the workspaces running them
    (`Workspace.stop_scripts` drops what is left when the check ends). Only for a cookbook read whole (a
    manifest renders each config as it is checked)."""
    if source.rendered_here:
        return []
    running: dict[int, Workspace] = {}
    for config in configs:
        if only not in (None, config):
            continue
        cells = [p for p in source.points(config).points if source.cell in (None, p.cell)]
        for commit in sorted({(p.commit or "") for p in cells} if trees else {""}):
            try:
                at = _tree(ws, trees, commit)[0]
                if at is not None and _unpaired(at, config) is None:
                    at.prefetch(at.entry(config))
                    running[id(at)] = at
            except CookbookError:       # the config's check says why
                continue
    return list(running.values())


MIN_PER_WORKER = 8        # configs; fewer are not worth a process
RUNS_PER_WORKER = 4       # runs of configs each worker takes, one after the other as it frees up


def _sections(job: _Job, configs: list[str], jobs: int | None, cache: RenderCache | None) -> list[Section]:
    """The sections of `configs`, in order: here, or in forked worker processes (at most `jobs`; default
    one per core, at most 4) when there are enough configs and the platform forks."""
    workers = min(jobs or min(os.cpu_count() or 1, 4), len(configs) // MIN_PER_WORKER)
    if workers < 2 or job.trees is not None or sys.platform != "linux" or multiprocessing.get_start_method(allow_none=True) not in (None, "fork"):
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
