"""Manifest -> Cookbook: resolve and render every point of every listed config, group points into
cells, attach provenance. I/O only through `recipes.workspace` and `read_manifest`.

A whole checkout without a manifest (`load_cookbook` given the checkout's folder): every config of
its master configs, one page per model name, provenance from the perf-changelog (`checkout_manifest`).
There, a config or point that cannot be rendered is left out and listed in `Cookbook.refused` with
its located reason; everything else is published.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection

from ..errors import CookbookError
from ..policy.rules import Policy, load_policy
from ..recipes.load import Document
from ..recipes.workspace import Workspace
from ..text import listing, unknown
from .cache import RenderCache, cells_cached
from .manifest import _MODEL_ID, ChangelogSource, ConfigSource, HistoryItem, Manifest, PageSpec, read_manifest, slugify, source_root

if TYPE_CHECKING:  # the models and the render stack load with the first render: `diff --cache` may need neither
    from ..pipeline import RenderedPoint
    from .model import Cell, Cookbook, Point, Provenance, Refused

Progress = Callable[[str], None]


def load_cookbook(manifest_path: Path, progress: Progress | None = None, policy: Policy | None = None,
                  workspaces: dict[Path, Workspace] | None = None, cache: RenderCache | None = None,
                  only: Collection[str] | None = None) -> Cookbook:
    """Render every point of the manifest. `workspaces` (checkout root -> Workspace) lets a caller
    that reads the same checkout again (the diff) share one Workspace, so nothing is parsed twice;
    `cache` reuses the cells of configs whose inputs are unchanged (see `cells.cache`); `only`
    renders just those config keys (the others, and the pages that list none of them, are left out).
    `manifest_path` a folder: that whole checkout (module docstring)."""
    if manifest_path.is_dir():
        ws = workspace_for(manifest_path, workspaces)
        manifest, doc, refused = checkout_manifest(ws)
        return load_configs(manifest, doc, ws, policy or load_policy(None), cache, only, progress=progress, refused=refused)
    manifest, doc = read_manifest(manifest_path)
    ws = workspace_for(source_root(manifest_path, manifest, doc), workspaces)
    if policy is None:
        policy = load_policy(manifest_path.parent / manifest.policy if manifest.policy else None)
    return load_configs(manifest, doc, ws, policy, cache, only, progress=progress)


def checkout_manifest(ws: Workspace) -> tuple[Manifest, Document, list[Refused]]:
    """The manifest of a whole checkout: every config key, on the page of its model's name (a config
    naming no usable model id is refused), PR and date from the latest perf-changelog entry naming
    it, every such entry as its history, the checkout's commit when git knows it."""
    changelog, facts = ws.changelog(), ws.checkout.git_facts()
    repo = str(Manifest.model_fields["repo"].default).rstrip("/")
    from .model import Refused

    pages: dict[str, tuple[str, list[ConfigSource]]] = {}
    refused: list[Refused] = []
    for key, entry in ws.entries().items():
        model = entry.model
        if not isinstance(model, str) or _MODEL_ID.fullmatch(model) is None:
            refused.append(Refused(config=key, point=None, reason=str(entry.doc.problem((key, "model"), f"model {model!r} is not a Hugging Face id (org/name)"))))
            continue
        history = tuple(HistoryItem(pr=e.pr, pr_url=f"{repo}/pull/{e.pr}" if e.pr else None, date=facts.changelog_days.get(e.line), description=e.description)
                        for e in changelog.history(key))
        latest = history[-1] if history else None
        note = _dram_note(ws, entry)
        source = ChangelogSource(key=key, pr=latest.pr if latest else None, commit=facts.commit, date=latest.date if latest else None,
                                 history=history, notes=[note] if note else [])
        pages.setdefault(slugify(model.split("/")[-1]), (model, []))[1].append(source)
    manifest = Manifest(title="InferenceX cookbook", source=ws.checkout.name,
                        pages=[PageSpec(model=model, configs=configs) for model, configs in pages.values()])
    return manifest, Document(ws.checkout.name, {}), refused


def _dram_note(ws: Workspace, entry: Any) -> str | None:
    from ..recipes.launches import dram_note

    try:
        return dram_note(entry, ws.runners(entry))
    except CookbookError:       # rows that cannot be read: the config is refused with its reason when rendered
        return None


def load_configs(manifest: Manifest, doc: Document, ws: Workspace, policy: Policy, cache: RenderCache | None,
                 only: Collection[str] | None, summaries: bool = True, progress: Progress | None = None,
                 refused: list[Refused] | None = None) -> Cookbook:
    """`load_cookbook` of a manifest already read. Without `summaries` (only without a cache, whose
    cells a build may reuse), cells leave out what only their pages show (`_summaries`, and the
    settings report of each point's deployment): a diff reads their blocks. With `refused` (a whole
    checkout), a config or point that cannot be rendered is listed there instead of stopping the run."""
    from ..pipeline import render_all_points
    from .model import Cookbook, Page

    if not summaries and cache is not None:
        raise ValueError("cells without their summaries are never cached")
    changelog = ws.changelog()
    pages = []
    warnings = []
    for p, spec, chosen in _chosen(manifest, doc, only):
        cells: list[Cell] = []
        for c, source in chosen:
            if source.key not in ws.entries():
                raise doc.error(("pages", p, "configs", c, "key"), f"{unknown('config key', source.key, ws.entries())} (checkout {ws.checkout.name})")
            if progress:
                progress(source.key)
            latest = changelog.latest_pr(source.key)
            changelog_pr = latest if latest != source.pr else None
            if refused is not None:
                config_cells = _tolerant_cells(manifest, source, ws, policy, cache, summaries, refused)
                cells.extend(config_cells)
                continue
            key = cache.config_key(ws, ws.entry(source.key), source, manifest.repo, changelog_pr, policy) if cache else None
            config_cells = cells_cached(cache, key, lambda: group_cells(manifest, source, render_all_points(ws, policy, source.key, summaries),
                                                                        changelog_pr, summaries))
            if cache is not None and key is not None:
                cache.keys[source.key] = key
            _check_metrics(doc, (p, c), source, [pt for cell in config_cells for pt in cell.points])
            if latest is not None and source.pr is not None and latest != source.pr:
                warnings.append(f"{source.key}: the latest perf-changelog entry is PR #{latest}, the manifest says PR #{source.pr}")
            cells.extend(config_cells)
        hardware = tuple(dict.fromkeys(cell.hw for cell in cells))
        if cells or refused is None:
            pages.append(Page(model=spec.model, slug=spec.slug, title=spec.title or spec.model.split("/")[-1],
                              hardware=hardware, cells=tuple(cells)))
    return Cookbook(title=manifest.title, repo=manifest.repo, generated_on=manifest.generated_on, pages=tuple(pages), warnings=tuple(warnings),
                    refused=tuple(refused or ()))


def _tolerant_cells(manifest: Manifest, source: ConfigSource, ws: Workspace, policy: Policy, cache: RenderCache | None,
                    summaries: bool, refused: list[Refused]) -> list[Cell]:
    """The cells of the points of one config that render; each config or point that does not is
    added to `refused` with its located reason. Cached with its refusals under the config's key."""
    from ..pipeline import RenderedPoint, render_point
    from ..recipes.master import check_framework
    from ..render.deploy import RunMemo
    from .model import Refused

    def render() -> tuple[tuple[Cell, ...], tuple[Refused, ...]]:
        out: list[RenderedPoint] = []
        said: list[Refused] = []
        memo = RunMemo()
        ws.prefetch(entry)
        for row in entry.rows:
            for conc in row.concs:
                try:
                    resolved = ws.point(entry, row, conc)
                    out.append(RenderedPoint(resolved, render_point(resolved, policy, summaries, memo)))
                except CookbookError as exc:
                    said.append(Refused(config=source.key, point=f"{row.slug}/c{conc}", reason=str(exc.problems[0])))
        return tuple(group_cells(manifest, source, out, None, summaries)), tuple(said)

    try:
        entry = ws.entry(source.key)
        check_framework(entry)
        key = cache.config_key(ws, entry, source, manifest.repo, None, policy) if cache else None
        if cache is not None and key is not None:
            cells, said = cache.cached("render-checkout", key, render)
            cache.keys[source.key] = key
        else:
            cells, said = render()
    except CookbookError as exc:
        refused.append(Refused(config=source.key, point=None, reason=str(exc.problems[0])))
        return []
    refused.extend(said)
    return list(cells)


def _chosen(manifest: Manifest, doc: Document, only: Collection[str] | None) -> list[tuple[int, PageSpec, list[tuple[int, ConfigSource]]]]:
    """Each page of the manifest with its configs (their positions and sources), in manifest order;
    with `only`, just those configs and the pages that list them."""
    pages = [(p, spec, [(c, source) for c, source in enumerate(spec.configs) if only is None or source.key in only])
             for p, spec in enumerate(manifest.pages)]
    return [page for page in pages if page[2] or only is None]


def workspace_for(root: Path, workspaces: dict[Path, Workspace] | None) -> Workspace:
    """The shared Workspace of `root` in `workspaces` (created on first use), or a new one."""
    if workspaces is None:
        return Workspace(root)
    key = root.resolve()
    if key not in workspaces:
        workspaces[key] = Workspace(key)
    return workspaces[key]


def group_cells(manifest: Manifest, source: ConfigSource, rendered: list[RenderedPoint], changelog_pr: int | None,
                summaries: bool = True) -> list[Cell]:
    """Points of one config grouped by topology label, in first-seen order: `<key>#0`, `<key>#1`, ...
    (without `summaries`, left out as `load_configs` says)."""
    from . import describe

    groups: dict[str, list[RenderedPoint]] = {}
    for rp in rendered:
        groups.setdefault(describe.topology_label(rp.deployment), []).append(rp)
    return [_cell(manifest, source, k, label, rps, changelog_pr, summaries) for k, (label, rps) in enumerate(groups.items())]


def _cell(manifest: Manifest, source: ConfigSource, k: int, label: str, rps: list[RenderedPoint], changelog_pr: int | None,
          summaries: bool) -> Cell:
    from . import describe
    from .model import Cell

    first = rps[0]
    image, digest, commit = describe.image_parts(first.deployment.image)
    points = tuple(_point(source, rp, summaries) for rp in rps)
    recipe = first.point.recipe_path
    cell_id = f"{source.key}#{k}"
    return Cell(
        id=cell_id, slug=slugify(cell_id.replace("#", "-")), config_key=source.key, hw=_hardware(first),
        model=first.deployment.model, label=label, gpus=first.deployment.gpus, nodes=first.deployment.nodes,
        cpu_nodes=first.deployment.cpu_nodes, image=image, image_digest=digest, image_commit=commit,
        router=describe.router_of(first.deployment.blocks), kv=describe.kv_tier_of(first.deployment.blocks),
        provenance=_provenance(manifest, source, recipe, changelog_pr), points=points, **_summaries(source, points, summaries))


def _summaries(source: ConfigSource, points: tuple[Point, ...], wanted: bool) -> dict[str, Any]:
    """What a cell's page shows besides its points: the spec-decode detail, the settings not published
    as-is, the disclosures and the notes (left empty when not `wanted`)."""
    from . import describe

    if not wanted:
        return dict(detail="", exclusions=(), disclosures=(), notes=())
    deps = [p.deployment for p in points]
    return dict(detail=describe.spec_detail(deps[0]), exclusions=describe.exclusions([(p.label, p.deployment) for p in points]),
                disclosures=describe.disclosures(deps), notes=describe.notes(deps) + tuple(source.notes))


def _hardware(rp: RenderedPoint) -> str:
    gpu = rp.point.typed.resources.gpu_type
    return str(gpu) if gpu else (rp.point.entry.key.split("-")[2] if rp.point.entry else "unknown")


def _point(source: ConfigSource, rp: RenderedPoint, summaries: bool) -> Point:
    from . import describe
    from .model import Point

    p = rp.point
    metrics = source.metrics.get(p.point_id) or source.metrics.get(p.label) or {}
    return Point(id=p.point_id, label=p.label, concs=(p.conc,) if p.conc else (), recipe=p.recipe_path,
                 override=p.recipe.selector, deployment=rp.deployment, metrics=metrics,
                 golden_al=describe.golden_al(rp.deployment) if summaries else None, row=p.row.index if p.row else None)


def _provenance(manifest: Manifest, source: ConfigSource, recipe: str, changelog_pr: int | None) -> Provenance:
    from .model import Provenance

    repo = manifest.repo.rstrip("/")
    run_url = f"{repo}/actions/runs/{source.run}/attempts/{source.attempt}" if source.run else None
    return Provenance(pr=source.pr, pr_url=f"{repo}/pull/{source.pr}" if source.pr else None, commit=source.commit,
                      commit_url=f"{repo}/commit/{source.commit}" if source.commit else None, run=source.run, attempt=source.attempt,
                      run_url=run_url, status=source.status, date=source.date, recipe=recipe, changelog_pr=changelog_pr,
                      dashboard=source.dashboard, history=source.history if isinstance(source, ChangelogSource) else ())


def _check_metrics(doc: Document, at: tuple[int, int], source: ConfigSource, points: list[Point]) -> None:
    ids = {pt.id for pt in points}
    labels = [pt.label for pt in points]
    for key in source.metrics:
        if key not in ids and labels.count(key) != 1:
            raise doc.error(("pages", at[0], "configs", at[1], "metrics", key),
                            f"no single point {key!r} in the config; use one of: {listing(sorted(ids), key)}")


def today() -> dt.date:
    """The build date: the only clock read, at the CLI edge."""
    return dt.date.today()
