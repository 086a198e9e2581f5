"""Cookbook -> the files of the site's docs folder, as text. Pure: no clock, no I/O but the package's `rules/site.yaml`.

`site_files(cookbook, templates, generated_on)` returns `{relative path: text}`:
- `index.md` (models x hardware), `<page>/index.md` (one per model: charts and a table of deployments),
  `<page>/<cell>/index.md` (one per deployment cell: its commands), `flags.md` (flag index), from the
  Jinja2 templates given as `{name: source}` (`site.read_templates` reads them);
- `<page>/launch-<cell>-<point>.sh` per point (and per derived variant), `<page>/pareto-<hw>-<kind>.svg`
  per model, hardware and x metric, and `cookbook.json` with every resolved command;
- every template under `assets/` copied to the same path without the prefix (CSS, JS).

Escaping: templates autoescape HTML; text placed in Markdown goes through the `md` filter, which also
writes Markdown's own punctuation as character references, so a value such as `<script>` or `a|b`
can neither open a tag nor split a table. The commands section of a deployment page is raw HTML the
generator writes (MkDocs passes it through: no Markdown, no highlighting), commands escaped; text
Markdown's whitespace normalisation would still change (tabs, control characters, lines of only
spaces) is an error rather than a silently different command.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, cast
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape
from pymdownx.slugs import slugify as _pymdownx_slugify

from ..cells.model import Cell, Cookbook, Page, Point, Provenance, Variant
from ..errors import CookbookError
from ..flags.check import CellCheck, check_cell
from ..recipes.load import package_yaml
from ..render.model import Block, Deployment
from ..render.shell import copy_all, format_block
from ..render.slurm import sbatch_script
from ..render.tables import tables
from ..text import one_line
from .chart import Axis, ChartPoint, frontier, pareto_svg

TEMPLATES = {"index.md": "home.md.j2", "flags.md": "flags.md.j2"}   # site-wide pages (a model page is model.md.j2, its cells cell.md.j2)
ASSETS = "assets/"

THROUGHPUT = "throughput_per_gpu"
SUMMARY = (THROUGHPUT, "p90_e2el_s", "p90_interactivity", "p90_ttft_s")   # shown above a point's commands
# chart x metrics, first present wins per point: (metric key, kind used in file names, axis)
X_METRICS: tuple[tuple[str, str, Axis], ...] = (
    ("p90_e2el_s", "latency", Axis("p90 end-to-end latency (s)", "lower")),
    ("p90_interactivity", "interactivity", Axis("p90 interactivity (tok/s/user)", "higher")),
)
Y_AXIS = Axis("throughput (tok/s/GPU)", "higher")
_MD_SPECIAL = frozenset("\\`*_{}[]()#+!|<>&\"'~^=$:")
_tab_slug = _pymdownx_slugify(case="lower")


# --- filters: text for Markdown, command blocks, links ------------------------------------------

# MkDocs' theme templates print site_name, nav and page titles without escaping them everywhere.
_TITLE_SAFE = str.maketrans({"<": "‹", ">": "›", "&": "+", '"': "”", "'": "’"})


def site_table(name: str) -> dict[str, Any]:
    """A table of `rules/site.yaml`: `statuses` (what each badge means), `disclosures` (their texts) or
    `metrics` (key -> [name, unit, format], in the order of the metrics tables' columns)."""
    return cast(dict[str, Any], package_yaml("rules/site.yaml")[name])


def safe_title(text: str) -> str:
    """A title for MkDocs' config (site_name, nav) or a page's front matter: no character that could open markup."""
    return text.translate(_TITLE_SAFE)


def md(value: object) -> Markup:
    """Text safe anywhere in a Markdown line or an HTML attribute: HTML and Markdown punctuation as
    character references, line breaks as spaces."""
    text = re.sub(r"\s*[\r\n]+\s*", " ", str(value))
    return Markup("".join(f"&#{ord(c)};" if c in _MD_SPECIAL else c for c in text))


def command(text: str, anchor: str, title: str, where: str = "", data: Mapping[str, str] | None = None) -> Markup:
    """A command as the HTML the site shows, written here once: a titled code block with a stable id
    and `data-*` attributes, `text` escaped and byte for byte (one final newline aside: the code
    element always ends with one), no syntax highlighting (MkDocs passes raw HTML through untouched).
    Commands stay out of the search index (`data-search-exclude`): every page repeats them per point
    and variant; flags are found through the flag index page."""
    check_code(text, where or anchor)
    attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in (data or {}).items())
    body = text[:-1] if text.endswith("\n") else text
    return Markup(f'<div id="{escape(anchor)}" class="highlight"{attrs} data-search-exclude><span class="filename">'
                  f'{escape(title)}</span><pre><code>{escape(body)}\n</code></pre></div>')


def check_code(text: str, where: str) -> None:
    """Refuse text that Markdown would change: it could not be shown as the command that runs."""
    bad = re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text)
    if bad:
        raise CookbookError.at("cookbook", 0, where, f"character {bad.group(0)!r} in a command cannot be published exactly")
    if any(line and not line.strip() for line in text.split("\n")):
        raise CookbookError.at("cookbook", 0, where, "a line of only spaces in a command cannot be published exactly")


def link(url: str | None, text: object) -> Markup:
    """An external link (http/https only; anything else is shown as text, never as a link)."""
    if not url or not re.match(r"https?://", url):
        return md(text)
    return Markup(f'<a href="{md(url)}">{md(text)}</a>')


def badge(status: str) -> Markup:
    slug = re.sub(r"[^a-z0-9-]", "", status)
    return Markup(f'<span class="cb-badge cb-status-{slug}" title="{md(site_table("statuses").get(status, status))}">{md(status)}</span>')


def code(value: object) -> Markup:
    """Inline code, breakable only after a separator (`/`, `:`, `@`, `_`, `-`, `.` before a letter) so
    that a model id or image wraps between its parts, never inside one (the stylesheet forbids other
    breaks); a part longer than a line (a digest) scrolls in its own box (`cb-nobreak`)."""
    text = str(value)
    parts = re.split(r"(?<=[/:@_-])", text)
    inner = Markup("<wbr>").join(md(part) for part in parts)
    if any(len(part) > 32 for part in parts):
        return Markup(f'<code class="cb-nobreak">{inner}</code>')
    return Markup(f"<code>{inner}</code>")


def recipe_link(prov: Provenance) -> Markup:
    """The recipe path as a link to the file at the cited commit (`<repo>/blob/<commit>/<path>`, beside
    the commit's own link), or as code when the commit's link is not a GitHub-style commit URL."""
    if not prov.commit or not prov.commit_url:     # a whole-checkout build outside git cites no commit
        return code(prov.recipe)
    base, sep, _ = prov.commit_url.partition("/commit/")
    if not sep or not re.match(r"https?://", base):
        return code(prov.recipe)
    url = f"{base}/blob/{quote(prov.commit)}/{quote(prov.recipe)}"
    return Markup(f'<a href="{escape(url)}"><code>{md(prov.recipe)}</code></a>')


# --- views: what the templates show ---------------------------------------------------------------

@dataclass(frozen=True)
class BlockView:
    title: str
    where: str
    text: str
    anchor: str
    data: Mapping[str, str]    # data-* attributes of a measured block (cell, point, block index)


@dataclass(frozen=True)
class RunView:
    """One tab of commands: a measured point or a derived variant."""

    tab: str
    anchor: str
    script: str          # file name beside the page
    blocks: tuple[BlockView, ...]
    copy_all: str
    sbatch: str          # file name beside the page of the one-job Slurm script
    sbatch_text: str
    point: Point
    summary: str         # metrics in one line, or what the variant is
    same_as: str | None  # tab of an earlier point with identical commands


@dataclass(frozen=True)
class VariantGroup:
    """The derived variants of one (router, KV tier) combination: one per measured point."""

    title: str
    runs: tuple[RunView, ...]


@dataclass(frozen=True)
class MetricRow:
    tab: str
    anchor: str
    concs: str
    values: tuple[str, ...]
    on_frontier: bool


@dataclass(frozen=True)
class CellView:
    cell: Cell
    name: str                         # in the model page's table (`series_names`)
    title: str                        # the page's heading (`cell_title`)
    runs: tuple[RunView, ...]
    variants: tuple[VariantGroup, ...]
    metric_titles: tuple[str, ...]
    metric_rows: tuple[MetricRow, ...]
    disclosures: tuple[str, ...]
    overrides: tuple[str, ...]
    flags: CellCheck
    variant_data: dict[str, object]   # derived variants, drawn in the browser (cookbook.js)


@dataclass(frozen=True)
class ChartView:
    file: str
    title: str
    alt: str
    frontier: tuple[tuple[str, str], ...]   # (text, page-relative link) of frontier points
    missing: tuple[str, ...] = ()           # deployments with measured points but none with this chart's x metric
    simulated: tuple[str, ...] = ()         # deployments on it whose throughput ran with a simulated acceptance length


@dataclass(frozen=True)
class HardwareView:
    hw: str
    cells: tuple[CellView, ...]
    charts: tuple[ChartView, ...]


@dataclass(frozen=True)
class PageView:
    page: Page
    hardware: tuple[HardwareView, ...]


@dataclass(frozen=True)
class HomeCell:
    href: str            # page-relative link to the hardware tab
    statuses: tuple[tuple[str, int], ...]   # (status, cells with it)
    date: str
    cells: int
    points: int


@dataclass(frozen=True)
class FlagRow:
    name: str
    kind: str            # flag | env
    values: tuple[str, ...]
    more_values: int
    cells: tuple[tuple[str, str, bool], ...]   # (text, link to the deployment page from the site root, derived)


# --- names and anchors ----------------------------------------------------------------------------

def hardware_title(hw: str) -> str:
    return hw.upper()


def tab_title(cell: Cell, point: Point) -> str:
    """The concurrency tab's label: the point label, or its id when the label repeats in the cell."""
    labels = [p.label for p in cell.points]
    return point.label if labels.count(point.label) == 1 else point.id.replace("/", " ")


def point_anchor(cell: Cell, point: Point) -> str:
    """`<cell.slug>-<tab slug>`: the id pymdownx.tabbed gives the tab (combine_header_slug)."""
    return f"{cell.slug}-{_tab_slug(tab_title(cell, point), '-')}"


def script_name(cell: Cell, point: Point) -> str:
    return f"launch-{cell.slug}-{_tab_slug(tab_title(cell, point), '-')}.sh"


def sbatch_name(script: str) -> str:
    """The Slurm job's file name beside a launch script's (`launch-X.sh` -> `sbatch-X.sh`)."""
    return "sbatch-" + script.removeprefix("launch-")


def variant_tab(cell: Cell, variant: Variant) -> str:
    point = _variant_point(cell, variant)
    return tab_title(cell, point) if point else variant.point.replace("/", " ")


def variant_anchor(cell: Cell, variant: Variant) -> str:
    slugs = (_tab_slug(text, "-") for text in (variant.router, variant.kv, variant_tab(cell, variant)))
    return f"{cell.slug}-derived-" + "-".join(slugs)


def _variant_point(cell: Cell, variant: Variant) -> Point | None:
    return next((p for p in cell.points if variant.point in (p.id, p.label)), None)


def hardware_anchor(hw: str) -> str:
    """The hardware tab's id: the `hardware` heading's id plus the tab slug (model.md.j2)."""
    return f"hardware-{_tab_slug(hardware_title(hw), '-')}"


def page_path(page: Page) -> str:
    return f"{page.slug}/index.md"


def cell_path(page: Page, cell: Cell) -> str:
    return f"{page.slug}/{cell.slug}/index.md"


# --- commands -------------------------------------------------------------------------------------

def where_text(block: Block) -> str:
    """Where a block runs and how many copies: the renderer's sentence plus the counts it implies."""
    facts = []
    if (block.workers or 1) > 1:
        facts.append(f"{block.workers} replicas")
    if block.node_rank is not None:
        facts.append(f"node {block.node_rank + 1} of {block.nodes_per_worker} (NODE_RANK={block.node_rank}); the other nodes run the blocks beside it")
    elif (block.nodes_per_worker or 1) > 1:
        facts.append(f"{block.nodes_per_worker} nodes each with NODE_RANK 0..{(block.nodes_per_worker or 1) - 1}")
    if block.gpu_pinning:
        facts.append("CUDA_VISIBLE_DEVICES=" + " / ".join(" ".join(p) for p in block.gpu_pinning))
    if (block.count or 1) > 1:
        facts.append(f"{block.count} instances")
    if block.ports:
        facts.append("ports " + ", ".join(block.ports))
    return "; ".join(part for part in (block.where, ", ".join(facts)) if part)


def launch_script(cookbook: Cookbook, cell: Cell, point: Point, dep: Deployment, generated_on: dt.date,
                  derived: str | None = None) -> str:
    """The copy-all script of `dep`, headed by `# ...` lines saying what it is and where it came from
    (`render.shell.copy_all` keeps each on its comment line)."""
    return copy_all(list(dep.blocks), script_heading(cookbook, cell, point, dep, generated_on, derived), tables().describe_placeholder)


def sbatch_job(cookbook: Cookbook, cell: Cell, point: Point, dep: Deployment, generated_on: dt.date,
               derived: str | None = None) -> str:
    """The one-job Slurm script of `dep` (`render.slurm`), with the launch script's heading."""
    return sbatch_script(dep, script_heading(cookbook, cell, point, dep, generated_on, derived), tables().describe_placeholder)


def script_heading(cookbook: Cookbook, cell: Cell, point: Point, dep: Deployment, generated_on: dt.date,
                   derived: str | None = None) -> list[str]:
    """What a script of `dep` is and where it came from, one comment line each."""
    prov = cell.provenance
    run = f"run {prov.run} attempt {prov.attempt}" if prov.run else "no pinned run"
    lines = [f"{cell.config_key} {point.id}: {dep.model}, {dep.gpus} GPUs on {dep.nodes} node(s)",
             f"status {'derived' if derived else prov.status}; {f'PR #{prov.pr}' if prov.pr else 'PR not recorded'}; "
             f"commit {prov.commit}; {run}",
             f"recipe {point.recipe}" + (f":{point.override}" if point.override else ""),
             f"image {dep.image}",
             f"{cookbook.title}, generated {generated_on.isoformat()} by cookbookgen"]
    if derived:
        lines.insert(0, f"DERIVED, NOT BENCHMARKED: {derived}")
    return lines


def _blocks(dep: Deployment, anchor: str, data: Mapping[str, str]) -> tuple[BlockView, ...]:
    """One view per block; measured blocks say which cell, point and block they are (`data-*`)."""
    return tuple(BlockView(b.title, where_text(b), format_block(b), f"{anchor}-{i}", {**data, "block": str(i)} if data else {})
                 for i, b in enumerate(dep.blocks))


def _metric_summary(point: Point) -> str:
    """The point's headline numbers, each with the caveat that qualifies it right beside it."""
    keys = [k for k in SUMMARY if k in point.metrics][:3]
    return " · ".join(f"{_metric(k)[0]} {_format_metric(k, point.metrics[k])} {_metric(k)[1]}{caveat(point, k)}" for k in keys)


def caveat(point: Point, key: str) -> str:
    """What qualifies metric `key` of `point`, to print beside the number: a throughput measured with a
    simulated speculative-decoding acceptance length (`SGLANG_SIMULATE_ACC_LEN`) is not what real
    traffic gets."""
    if key == THROUGHPUT and point.golden_al:
        return f" (with a simulated acceptance length of {point.golden_al}, SGLANG_SIMULATE_ACC_LEN or ATOM's --spec-decode-acceptance-length: real traffic differs)"
    return ""


def _run_view(cookbook: Cookbook, cell: Cell, point: Point, generated_on: dt.date, earlier: dict[str, str]) -> RunView:
    anchor = point_anchor(cell, point)
    blocks = _blocks(point.deployment, anchor, {"cell": cell.id, "point": point.id})
    same = earlier.setdefault("\n\n".join(b.text for b in blocks), tab_title(cell, point))
    return RunView(tab=tab_title(cell, point), anchor=anchor, script=script_name(cell, point),
                   blocks=blocks, copy_all=launch_script(cookbook, cell, point, point.deployment, generated_on),
                   sbatch=sbatch_name(script_name(cell, point)), sbatch_text=sbatch_job(cookbook, cell, point, point.deployment, generated_on),
                   point=point, summary=_metric_summary(point), same_as=same if same != tab_title(cell, point) else None)


def _variant_view(cookbook: Cookbook, cell: Cell, variant: Variant, generated_on: dt.date) -> RunView:
    anchor = variant_anchor(cell, variant)
    point = _variant_point(cell, variant) or cell.points[0]
    what = f"{variant.router} router, {variant.kv} KV tier, from measured point {variant.point}"
    script = launch_script(cookbook, cell, point, variant.deployment, generated_on, derived=what)
    return RunView(tab=variant_tab(cell, variant), anchor=anchor, script=f"launch-{anchor}.sh",
                   blocks=_blocks(variant.deployment, anchor, {}), copy_all=script, sbatch=f"sbatch-{anchor}.sh",
                   sbatch_text=sbatch_job(cookbook, cell, point, variant.deployment, generated_on, derived=what),
                   point=point, summary=f"{variant.router} router with KV tier {variant.kv}, derived from point {variant.point}",
                   same_as=None)


def variant_groups(cookbook: Cookbook, cell: Cell, generated_on: dt.date) -> tuple[VariantGroup, ...]:
    """Derived variants grouped by (router, KV tier), in first-seen order."""
    groups: dict[tuple[str, str], list[RunView]] = {}
    for v in cell.variants:
        groups.setdefault((v.router, v.kv), []).append(_variant_view(cookbook, cell, v, generated_on))
    return tuple(VariantGroup(f"{router} router, KV tier {kv}", tuple(runs)) for (router, kv), runs in groups.items())


# --- metrics and charts ---------------------------------------------------------------------------

def _metric(key: str) -> list[str]:
    """[name, unit, format] of a metric; an unknown key names itself, without a unit."""
    spec: list[str] = site_table("metrics").get(key, [key, "", "{:g}"])
    return spec


def _format_metric(key: str, value: float) -> str:
    return _metric(key)[2].format(value)


def metric_title(key: str) -> str:
    name, unit, _ = _metric(key)
    return f"{name} ({unit})" if unit else name


def metric_keys(points: tuple[Point, ...]) -> list[str]:
    present = {k for p in points for k in p.metrics}
    known = site_table("metrics")
    return [k for k in known if k in present] + sorted(present - set(known))


XMetric = tuple[str, str, Axis]   # an entry of X_METRICS


def chart_groups(cells: tuple[Cell, ...]) -> dict[XMetric, list[tuple[Cell, Point]]]:
    """Per x metric (one chart each, in `X_METRICS` order), every measured point with a throughput and
    that metric: all deployments of a hardware on the same axes, so they can be compared (a point with
    both metrics is on both charts)."""
    groups: dict[XMetric, list[tuple[Cell, Point]]] = {}
    for x in X_METRICS:
        members = [(cell, point) for cell in cells for point in cell.points if x[0] in point.metrics and THROUGHPUT in point.metrics]
        if members:
            groups[x] = members
    return groups


def series_names(page: Page) -> dict[str, str]:
    """Each cell's name (by id) in its model page's table and charts, its heading and the flag index:
    topology label, spec-decode detail and router; when other cells of the page on the same hardware
    have that name (configs that differ only in precision or image), also the parts of its config key
    theirs do not all have (`fp8`), or the whole key."""
    base = {c.id: " · ".join(t for t in (c.label, c.detail, c.router) if t) for c in page.cells}
    alike: dict[tuple[str, str], list[str]] = {}
    for c in page.cells:
        alike.setdefault((c.hw, base[c.id]), []).append(c.config_key)
    names = {}
    for c in page.cells:
        keys = alike[(c.hw, base[c.id])]
        common = set.intersection(*(set(k.split("-")) for k in keys))
        own = "-".join(part for part in c.config_key.split("-") if part not in common) or c.config_key
        names[c.id] = f"{base[c.id]} · {own}" if len(set(keys)) > 1 else base[c.id]
    return names


def cell_title(cell: Cell, name: str) -> str:
    """The cell's heading (`name` from `series_names`): unique within its model page."""
    return f"{hardware_title(cell.hw)} · {name}"


def _simulated(members: list[tuple[Cell, Point]], names: dict[str, str]) -> tuple[str, ...]:
    """The chart's deployments whose throughput ran with a simulated acceptance length, with it; one
    entry "every deployment (AL)" when all of them did, with one length."""
    found = dict.fromkeys(f"{names[c.id]} ({p.golden_al})" for c, p in members if p.golden_al)
    lengths = {p.golden_al for _, p in members}
    if found and len(lengths) == 1 and all(p.golden_al for _, p in members):
        return (f"every deployment on it ({lengths.pop()})",)
    return tuple(found)


def chart(page: Page, hw: str, x: XMetric, members: list[tuple[Cell, Point]],
          names: dict[str, str]) -> tuple[ChartView, str, set[tuple[str, str]]]:
    """The chart's view, its SVG text and the (cell id, point id) pairs on its frontier."""
    key, kind, axis = x
    pts = [ChartPoint(names[c.id], tab_title(c, p), p.metrics[key], p.metrics[THROUGHPUT]) for c, p in members]
    best = frontier(pts, axis.better)
    title = f"{page.title} on {hardware_title(hw)}: throughput per GPU vs {axis.title}"
    file = f"pareto-{_tab_slug(hw, '-')}-{kind}.svg"
    front = tuple((f"{pts[i].series} {pts[i].label}", f"{members[i][0].slug}/index.html#{point_anchor(*members[i])}")
                  for i in best)
    alt = f"{title}. Pareto frontier: " + ", ".join(t for t, _ in front)
    on = {(members[i][0].id, members[i][1].id) for i in best}
    svg = pareto_svg(pts, axis, Y_AXIS, f"{hardware_title(hw)}: throughput per GPU vs {axis.title}")
    return ChartView(file, title, alt, front), svg, on


def _metric_rows(cell: Cell, keys: list[str], on_front: set[tuple[str, str]]) -> tuple[MetricRow, ...]:
    return tuple(MetricRow(tab_title(cell, p), point_anchor(cell, p), ", ".join(str(c) for c in p.concs),
                           tuple(_format_metric(k, p.metrics[k]) + (f" (simulated AL {p.golden_al})" if caveat(p, k) else "")
                                 if k in p.metrics else "—" for k in keys),
                           (cell.id, p.id) in on_front)
                 for p in cell.points)


def _disclosures(cell: Cell) -> tuple[str, ...]:
    al = ", ".join(dict.fromkeys(p.golden_al for p in cell.points if p.golden_al)) or "unknown"
    return tuple(site_table("disclosures").get(d, d).format(al=al) for d in cell.disclosures)


def cell_view(cookbook: Cookbook, cell: Cell, name: str, generated_on: dt.date, on_front: set[tuple[str, str]]) -> CellView:
    earlier: dict[str, str] = {}
    runs = tuple(_run_view(cookbook, cell, p, generated_on, earlier) for p in cell.points)
    variants = variant_groups(cookbook, cell, generated_on)
    keys = metric_keys(cell.points)
    overrides = tuple(dict.fromkeys(p.override for p in cell.points if p.override))
    flags = check_cell(cell.id, cell.image, (b for p in cell.points for b in p.deployment.blocks))
    return CellView(cell, name, cell_title(cell, name), runs, variants, tuple(metric_title(k) for k in keys),
                    _metric_rows(cell, keys, on_front), _disclosures(cell), overrides, flags, _variant_data(cell, variants))


def _variant_data(cell: Cell, groups: tuple[VariantGroup, ...]) -> dict[str, object]:
    """The derived variants as cookbook.js draws them: `variants` (router, kv, point tab, anchor, script,
    blocks) whose block `text` is an index into `texts`, each distinct command once (the variants of
    a cell repeat most of their blocks)."""
    of = {variant_anchor(cell, v): v for v in cell.variants}
    texts: dict[str, int] = {}
    variants = [{"router": of[r.anchor].router, "kv": of[r.anchor].kv, "point": r.tab, "anchor": r.anchor, "script": r.script,
                 "blocks": [{"title": b.title, "where": b.where, "text": texts.setdefault(b.text, len(texts))} for b in r.blocks]}
                for g in groups for r in g.runs]
    return {"texts": list(texts), "variants": variants}


def page_view(cookbook: Cookbook, page: Page, generated_on: dt.date) -> tuple[PageView, dict[str, str]]:
    """The page's view and its SVG charts (`{file name: svg}`)."""
    hardware, svgs = [], {}
    names = series_names(page)
    for hw in page.hardware:
        cells = tuple(c for c in page.cells if c.hw == hw)
        charts, on_front = [], set()
        for x, members in chart_groups(cells).items():
            view, svg, on = chart(page, hw, x, members, names)
            shown = {c.id for c, _ in members}
            missing = tuple(names[c.id] for c in cells if c.id not in shown and any(THROUGHPUT in p.metrics for p in c.points))
            simulated = _simulated(members, names)
            charts.append(replace(view, missing=missing, simulated=simulated))
            svgs[view.file] = svg
            on_front |= on
        views = tuple(cell_view(cookbook, c, names[c.id], generated_on, on_front) for c in cells)
        hardware.append(HardwareView(hw, views, tuple(charts)))
    return PageView(page, tuple(hardware)), svgs


# --- home and flag index --------------------------------------------------------------------------

def home_cell(page: Page, hw: str) -> HomeCell | None:
    cells = [c for c in page.cells if c.hw == hw]
    if not cells:
        return None
    counts = tuple(Counter(c.provenance.status for c in cells).items())      # in first-seen order
    dates = [c.provenance.date for c in cells if c.provenance.date]
    return HomeCell(f"{page.slug}/index.html#{hardware_anchor(hw)}", counts, max(dates).isoformat() if dates else "—",
                    len(cells), sum(len(c.points) for c in cells))


def _settings_of(dep: Deployment) -> list[tuple[str, str, str]]:
    """(name, kind, value) of every flag and env entry; a switch's value is "", an empty value `''`."""
    def shown(value: str) -> str:
        return value or "''"

    out = []
    for block in dep.blocks:
        out += [(a[0], "flag", " ".join(map(shown, a[1:]))) for a in block.args if a[0].startswith("-")]
        out += [(k, "env", shown(v)) for k, v in block.env.items()]
    return out


# (flag or env name, "flag" | "env") -> its values in first-use order, and the cells setting it as
# (title, link) -> True when only derived variants set it
FlagSettings = dict[tuple[str, str], tuple[dict[str, None], dict[tuple[str, str], bool]]]


def page_flags(page: Page) -> FlagSettings:
    """Every flag and env variable a model page's published commands set (`FlagSettings`)."""
    seen: FlagSettings = {}
    names = series_names(page)
    for cell in page.cells:
        where = (cell_title(cell, names[cell.id]), f"{page.slug}/{cell.slug}/index.html")
        runs = [(p.deployment, False) for p in cell.points] + [(v.deployment, True) for v in cell.variants]
        for dep, derived in runs:
            for name, kind, value in _settings_of(dep):
                values, cells = seen.setdefault((name, kind), ({}, {}))
                values.setdefault(value, None)
                cells[where] = cells.get(where, True) and derived
    return seen


def flag_rows(pages: Iterable[FlagSettings], max_values: int = 4) -> tuple[FlagRow, ...]:
    """Every flag and env variable of every published command (the model pages' `page_flags`, in page
    order), with its values and the cells setting it; a cell whose measured commands never set it,
    only its derived variants, is marked derived."""
    seen: FlagSettings = {}
    for part in pages:
        for key, (values, cells) in part.items():
            all_values, all_cells = seen.setdefault(key, ({}, {}))
            all_values.update(values)
            all_cells.update(cells)
    rows = []
    for (name, kind), (values, cells) in sorted(seen.items(), key=lambda kv: (kv[0][1] == "env", kv[0][0].lstrip("-").lower())):
        shown = [v for v in values if v][:max_values]
        rows.append(FlagRow(name, kind, tuple(shown), len([v for v in values if v]) - len(shown),
                            tuple((text, href, derived) for (text, href), derived in cells.items())))
    return tuple(rows)


# --- cookbook.json ----------------------------------------------------------------------------------

def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))   # compact: the C encoder


def _run_json(page: Page, cell: Cell, run: RunView, dep: Deployment) -> dict[str, object]:
    base = f"{page.slug}/"
    return {"anchor": run.anchor, "url": f"{base}{cell.slug}/index.html#{run.anchor}", "script": base + run.script,
            "gpus": dep.gpus, "nodes": dep.nodes, "image": dep.image,
            "blocks": [{**b.to_json(), "text": shown.text} for b, shown in zip(dep.blocks, run.blocks)]}   # the launch script is at "script"


def _cell_json(page: Page, view: CellView) -> dict[str, object]:
    cell = view.cell
    points = [{"id": r.point.id, "label": r.point.label, "concurrencies": list(r.point.concs), "recipe": r.point.recipe,
               "override": r.point.override, "metrics": dict(r.point.metrics), "golden_acceptance_length": r.point.golden_al,
               **_run_json(page, cell, r, r.point.deployment)} for r in view.runs]
    runs = [r for g in view.variants for r in g.runs]
    by_anchor = {variant_anchor(cell, v): v for v in cell.variants}
    variants = [{"status": "derived", "router": by_anchor[r.anchor].router, "kv": by_anchor[r.anchor].kv,
                 "from_point": by_anchor[r.anchor].point, **_run_json(page, cell, r, by_anchor[r.anchor].deployment)} for r in runs]
    return {"id": cell.id, "slug": cell.slug, "url": f"{page.slug}/{cell.slug}/index.html", "config_key": cell.config_key,
            "hardware": cell.hw, "label": cell.label, "detail": cell.detail, "gpus": cell.gpus, "nodes": cell.nodes,
            "image": cell.image, "image_digest": cell.image_digest, "image_commit": cell.image_commit,
            "router": cell.router, "kv": cell.kv, "provenance": cell.provenance.model_dump(mode="json"),
            "points": points, "derived_variants": variants,
            "exclusions": [e.model_dump(mode="json") for e in cell.exclusions],
            "disclosures": list(cell.disclosures), "notes": list(cell.notes)}


def page_json(view: PageView) -> str:
    """The model page's entry of `cookbook.json`, as JSON text."""
    page = view.page
    return _json({"model": page.model, "slug": page.slug, "title": page.title, "url": f"{page.slug}/index.html",
                  "cells": [_cell_json(page, c) for hw in view.hardware for c in hw.cells]})


def cookbook_json(cookbook: Cookbook, pages: list[str], generated_on: dt.date) -> str:
    """The whole `cookbook.json`, from the pages' entries (`page_json`)."""
    head = _json({"schema": 1, "title": cookbook.title, "repo": cookbook.repo, "generated_on": generated_on.isoformat(),
                  "warnings": list(cookbook.warnings), "refused": [r.model_dump() for r in cookbook.refused]})
    return f'{head[:-1]},"pages":[{",".join(pages)}]}}\n'


# --- templates and the whole site -------------------------------------------------------------------

def environment(templates: Mapping[str, str]) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.DictLoader(dict(templates)), autoescape=True, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters.update(md=md, code=code, badge=badge, command=command, safe_title=lambda t: Markup(json.dumps(safe_title(one_line(t)))))
    env.globals.update(link=link, recipe_link=recipe_link, STATUS_TEXT=site_table("statuses"), hardware_title=hardware_title,
                       hardware_anchor=hardware_anchor, page_path=page_path)
    return env


def render_template(env: jinja2.Environment, name: str, **context: object) -> str:
    """Render one template; a template mistake becomes a located CookbookError."""
    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateSyntaxError as exc:
        raise CookbookError.at(f"templates/{exc.name or name}", exc.lineno, "", exc.message or "syntax error") from None
    except jinja2.TemplateError as exc:
        raise CookbookError.at(f"templates/{name}", 0, "", str(exc)) from None


@dataclass(frozen=True)
class PageFiles:
    """What one model page contributes to the site: its files (its Markdown, its deployment pages,
    their launch scripts, its charts), its entry of `cookbook.json` and its part of the flag index."""

    files: dict[str, str]
    json: str
    flags: FlagSettings


def page_files(cookbook: Cookbook, page: Page, env: jinja2.Environment, generated_on: dt.date) -> PageFiles:
    """A function of the page, the cookbook's title and repo, the date, the templates and nothing else."""
    view, svgs = page_view(cookbook, page, generated_on)
    files = {f"{page.slug}/{name}": svg for name, svg in svgs.items()}
    files[page_path(page)] = render_template(env, "model.md.j2", cookbook=cookbook, view=view, generated_on=generated_on)
    for hw in view.hardware:
        for cell in hw.cells:
            files[cell_path(page, cell.cell)] = render_template(env, "cell.md.j2", view=view, c=cell)
            derived = tuple(r for g in cell.variants for r in g.runs)
            files.update({f"{page.slug}/{r.script}": r.copy_all for r in cell.runs + derived})
            files.update({f"{page.slug}/{r.sbatch}": r.sbatch_text for r in cell.runs + derived})
    return PageFiles(files, page_json(view), page_flags(page))


def site_files(cookbook: Cookbook, templates: Mapping[str, str], generated_on: dt.date,
               done: Mapping[str, PageFiles] | None = None) -> dict[str, str]:
    """Every file of the docs folder, by relative path (see the module docstring). `done`: the model
    pages already generated (`page_files`), by slug."""
    env = environment(templates)
    files = {name[len(ASSETS):]: text for name, text in templates.items() if name.startswith(ASSETS)}
    made = [(done or {}).get(page.slug) or page_files(cookbook, page, env, generated_on) for page in cookbook.pages]
    for each in made:
        files.update(each.files)
    hardware = list(dict.fromkeys(hw for page in cookbook.pages for hw in page.hardware))
    context = {"cookbook": cookbook, "pages": cookbook.pages, "generated_on": generated_on, "hardware": hardware,
               "home_cell": home_cell, "flags": flag_rows(each.flags for each in made)}
    for path, name in TEMPLATES.items():
        files[path] = render_template(env, name, **context)
    files["cookbook.json"] = cookbook_json(cookbook, [each.json for each in made], generated_on)
    return files
