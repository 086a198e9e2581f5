"""A manifest's `cookbookgen diff` report, config by config (text or Markdown). I/O: the manifest, the
checkout (through `recipes.workspace`) and, with `--cache`, the cache folder (`cells.cache`).

The report of a manifest is a head, one section per config and a tail, and a config's section is a
function of that config's findings alone (`diff.report`). So:
- sections are computed config by config: with enough configs and cores, contiguous runs of configs
  (several per worker, shrinking, handed out as workers free up) are checked in forked worker processes that
  inherit what the parent read (the manifest, the perf-changelog, the master configs split by
  entry: each run parses the entries of its configs, `_master_shares`), and the sections are put
  together in config order (of several errors, a master config's first and then the earliest
  config's is raised, as in one process);
- with `--cache`, the section of a config whose inputs are unchanged is reused. Its findings depend on:
  - the published points, which for a manifest are rendered from the config's render inputs: the
    `cells.cache` key (cookbookgen's code and data files, the policy, the checkout root, the manifest
    entry and changelog PR, the master entry's data, every recipe file's path and bytes);
  - the recipe side, read from the same master entry and recipe files with the same policy;
  - the master entry's line numbers (the `file:line` of findings about the image and missing points);
  and the section on the report format and colour. The section key is the sha256 of all of these: a
  key that matches means every input of the comparison is the same. Errors are never stored: a config
  that fails to render fails again.
Only manifests, in text or Markdown, without `--logs`, checked against their own checkout, go this
way; everything else (and JSON) runs `diff.check.check` over the whole cookbook. The output is the
same either way (`tests/test_cache.py`, `tests/test_diff*.py`).
"""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, countOf
from pathlib import Path
from typing import Callable, NamedTuple

from ..cells.assemble import load_configs, render_keys, workspace_for
from ..cells.cache import RenderCache, canonical
from ..cells.manifest import Manifest, read_manifest, source_root
from ..errors import CookbookError, Problem
from ..policy.rules import Policy, load_policy
from ..recipes.load import Document
from ..recipes.workspace import DeferredEntries, Workspace

KIND = "cookbook manifest (rendered)"
Section = tuple[str, int, int]   # report text, points paired, mismatches


def applies(path: Path, fmt: str, logs: Path | None) -> bool:
    return path.suffix in (".yaml", ".yml") and path.is_file() and fmt in ("text", "markdown") and logs is None


def manifest_report(path: Path, cache: RenderCache | None, extra_policy: Path | None, source: Path | None, only: str | None,
                    fmt: str, color: bool, workspaces: dict[Path, Workspace], jobs: int | None = None) -> tuple[str, int, Path] | None:
    """The report text, exit status and checkout, or None when the manifest is checked against another checkout.
    Without a cache every config is checked (in parallel when it pays), and the report is the same."""
    given = load_policy(extra_policy) if extra_policy else None     # read first, as the full check does
    manifest, doc = read_manifest(path)
    root = source_root(path, manifest, doc)
    if source is not None and Path(source).resolve() != root:
        return None
    policy = given if given is not None else load_policy(path.parent / manifest.policy if manifest.policy else None)
    ws = workspace_for(root, workspaces)
    if cache is None:
        render: dict[str, str | None] = {source.key: None for spec in manifest.pages for source in spec.configs}
    else:
        render = render_keys(manifest, ws, policy, cache)
    lines = _entry_lines(ws)
    sections: dict[str, Section] = {}
    keys: dict[str, str] = {}
    for config, rkey in render.items():
        if rkey is None or cache is None:
            continue
        entry = ws.entries()[config]
        keys[config] = hashlib.sha256("\0".join(
            ("diff-section", rkey, fmt, str(color), entry.doc.file, lines(entry.doc, config))).encode()).hexdigest()
        hit = cache.get("diff", keys[config])
        if isinstance(hit, tuple) and len(hit) == 3:
            sections[config] = hit
    missing = [c for c in render if c not in sections]
    if missing:
        sections.update(_check(_Job(path, manifest, doc, policy, ws, cache, only, fmt, color), missing, keys, jobs))
    configs = list(render)
    if only is not None and only not in configs:
        raise CookbookError.at(str(path), 0, only, f"the cookbook has no config {only!r}; it has: {', '.join(configs)}")
    shown = [c for c in configs if only is None or c == only]
    points = sum(sections[c][1] for c in shown)
    mismatches = sum(sections[c][2] for c in shown)
    exit_code = 1 if mismatches else 0
    return _assemble(str(path), str(ws.checkout.root), [sections[c][0] for c in shown], points, mismatches,
                     len(shown), exit_code, fmt, color), exit_code, root


def _check(job: _Job, configs: list[str], keys: dict[str, str], jobs: int | None) -> dict[str, Section]:
    """Render and check `configs` in full, as `cookbookgen diff` without a cache does; store their sections.

    With several cores and enough configs, contiguous runs of configs are checked in forked worker
    processes (the parsed checkout is inherited); the sections come back and are put in config order,
    and of several errors the one of the earliest config is raised, as a sequential run would."""
    workers, runs = _runs(configs, jobs)
    out = _check_configs(job, configs) if workers < 2 else _check_parallel(job, workers, runs)
    for config, section in out.items():
        if config in keys and job.cache is not None and (job.only is None or config == job.only):
            job.cache.put("diff", keys[config], section)
    return out


MIN_PER_WORKER = 8        # configs; fewer are not worth a process
SHARE_PER_RUN = 3         # a run takes 1/(SHARE_PER_RUN x workers) of the configs left, so runs shrink ...
MIN_RUN = 2               # ... down to this many configs: the last runs are short, and no worker idles long at the end


@dataclass(frozen=True)
class _Job:
    """What every run of configs shares (forked workers inherit it; it is never pickled)."""

    path: Path
    manifest: Manifest
    doc: Document
    policy: Policy
    ws: Workspace
    cache: RenderCache | None
    only: str | None
    fmt: str
    color: bool


def _runs(configs: list[str], jobs: int | None = None) -> tuple[int, list[list[str]]]:
    """The number of worker processes (1: check in this process) and the contiguous runs of configs
    they take, in order, as workers free up; at most `jobs` workers (default: one per core, at most 4).
    Runs shrink as configs are handed out (guided scheduling): a worker that takes the last run
    keeps the others waiting at most that long."""
    workers = min(jobs or min(os.cpu_count() or 1, 4), len(configs) // MIN_PER_WORKER)
    if workers < 2 or multiprocessing.get_start_method(allow_none=True) not in (None, "fork") or sys.platform != "linux":
        return 1, [configs]
    runs: list[list[str]] = []
    start = 0
    while start < len(configs):
        size = max(MIN_RUN, -(-(len(configs) - start) // (workers * SHARE_PER_RUN)))
        runs.append(configs[start:start + size])
        start += size
    return workers, runs


_FORKED: tuple[_Job, list[list[str]], list[list[str]] | None] | None = None


class Outcome(NamedTuple):
    """What a worker sends back for its run of configs."""

    sections: dict[str, Section]
    problems: tuple[Problem, ...] | None       # the error that stopped the run (its exception does not pickle)
    deferred: list[tuple[str, str, bytes]]     # cache entries to store
    master_error: bool = False                 # the problems are the master configs' (they come first)
    split_failed: bool = False                 # the master configs did not split as they parse (`DeferredEntries`)


def _check_parallel(job: _Job, workers: int, runs: list[list[str]]) -> dict[str, Section]:
    global _FORKED
    _before_fork(job)
    entries = job.ws.entries()
    shares = _master_shares(entries, runs) if isinstance(entries, DeferredEntries) else None
    _FORKED = (job, runs, shares)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_worker, range(len(runs))))
    finally:
        _FORKED = None
    if any(r.split_failed for r in results):     # rare (see `load.split_top_level`): check again, the masters read whole
        job.ws.whole_entries()
        return _check_parallel(job, workers, runs)
    first = next((r for r in results if r.master_error), None) or next((r for r in results if r.problems is not None), None)
    out: dict[str, Section] = {}
    for result in results:
        if result is first:
            raise CookbookError(result.problems or ())
        if job.cache is not None:
            for kind, key, data in result.deferred:
                job.cache.put_bytes(kind, key, data)
        out.update(result.sections)
    return out


def _before_fork(job: _Job) -> None:
    """Do once, in this process, what every worker would otherwise do for itself: import the checking
    and rendering modules, read the perf-changelog and index the master configs (all inherited by
    the fork; each worker parses the master entries of its own runs, `_master_shares`)."""
    from . import check, report, sources  # noqa: F401
    from ..recipes import schema  # noqa: F401

    job.ws.defer_entries()
    job.ws.changelog()


def _master_shares(entries: DeferredEntries, runs: list[list[str]]) -> list[list[str]]:
    """The master entries each run parses before its configs: those of its configs, and a turn of the
    entries no config names, so that every entry is parsed, and its errors found, as a whole read would."""
    shares = [[config for config in run if config in entries] for run in runs]
    named = {key for share in shares for key in share}
    for i, key in enumerate(key for key in entries if key not in named):
        shares[i % len(runs)].append(key)
    return shares


def _worker(index: int) -> Outcome:
    assert _FORKED is not None
    job, runs, shares = _FORKED
    deferred: list[tuple[str, str, bytes]] = []
    if job.cache is not None:
        job.cache.deferred = deferred
    entries = job.ws.entries()
    split = entries if isinstance(entries, DeferredEntries) else None
    if split is not None and shares is not None:
        try:
            split.parse(shares[index])
        except CookbookError as exc:
            return Outcome({}, exc.problems, deferred, master_error=True)
    sections: dict[str, Section] = {}
    problems = None
    try:
        sections = _check_configs(job, runs[index])
    except CookbookError as exc:
        problems = exc.problems
    return Outcome(sections, problems, deferred, split_failed=split is not None and split.split_failed)


COLLECT_EVERY = 256       # configs between two garbage collections while checking


def _check_configs(job: _Job, configs: list[str]) -> dict[str, Section]:
    """The sections of `configs`, one config at a time: each is rendered, checked and reported, then
    its recipes, points and memos are let go (a config's section needs nothing from the others).

    The objects of a config are freed by reference counting when it is let go; the cyclic garbage
    collector, which would otherwise rescan them while they are built, runs every `COLLECT_EVERY`
    configs instead, and never rescans what was loaded before (the master configs: `gc.freeze`)."""
    out: dict[str, Section] = {}
    job.ws.entries()          # the master configs, read once for all the configs: frozen below
    enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        for i, config in enumerate(configs, 1):
            try:
                out[config] = _check_config(job, config)
            finally:
                job.ws.release_points()
            if i % COLLECT_EVERY == 0:
                gc.collect()
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()
    return out


def _check_config(job: _Job, config: str) -> Section:
    from .check import PointRun, check_configs, flatten
    from .report import TextRenderer, md_config, text_config
    from .sources import published_from_cookbook

    # without a cache the cells are the diff's alone: it reads their points, not what their pages show
    cookbook = load_configs(job.manifest, job.doc, job.ws, job.policy, job.cache, {config}, summaries=job.cache is not None)
    if job.only is not None and config != job.only:
        return ("", 0, 0)      # rendered (so its errors surface) but not shown
    published = published_from_cookbook(cookbook, str(job.path), KIND)
    if config not in published.configs():
        return ("", 0, 0)      # no point to compare
    checked = check_configs(published, job.ws, job.policy, config)
    runs: list[PointRun] = checked.runs.get(config, []) + [(None, checked.variants.get(config, []))]
    if not any(found for _, found in runs):
        return ("", len(checked.pairs), 0)
    text = text_config(TextRenderer(job.color), config, runs) if job.fmt == "text" else md_config(config, flatten(runs))
    mismatches = countOf(map(attrgetter("cls"), chain.from_iterable(found for _, found in runs)), "mismatch")
    return (text, len(checked.pairs), mismatches)


def _entry_lines(ws: Workspace) -> Callable[[Document, str], str]:
    """The line numbers of one master entry, as text (grouped once per master file)."""
    def lines(doc: Document, key: str) -> str:
        grouped = doc.memo.get("lines_by_entry")
        if grouped is None:
            grouped = {}
            for path, line in doc.lines.items():
                if path:
                    grouped.setdefault(path[0], []).append((path, line))
            doc.memo["lines_by_entry"] = grouped
        return canonical(grouped.get(key, []))    # in document order, which the text fixes
    return lines


def _assemble(cookbook: str, checkout: str, sections: list[str], points: int, mismatches: int, configs: int,
              exit_code: int, fmt: str, color: bool) -> str:
    from .report import TextRenderer, md_head, md_tail, text_head, text_tail

    if fmt == "markdown":
        return md_head(cookbook, KIND, checkout) + "".join(sections) + md_tail((), (), mismatches, points, configs)
    renderer = TextRenderer(color)
    return (text_head(renderer, cookbook, KIND, checkout) + "".join(sections)
            + text_tail(renderer, (), (), mismatches, points, configs, exit_code))
