"""publish.pages and publish.chart: pure page generation, escaping, scripts that bash accepts, charts."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markupsafe import escape

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.model import Cell, Cookbook, Exclusion, Variant
from cookbookgen.cells.variants import with_variants
from cookbookgen.errors import CookbookError
from cookbookgen.publish import pages
from cookbookgen.publish.chart import Axis, ChartPoint, frontier, pareto_svg
from cookbookgen.publish.site import read_templates
from cookbookgen.render.model import Block
from cookbookgen.render.shell import block_argv, format_block, placeholders_in, processes

from conftest import bundled_keys
from test_shell import run_with_stubs

ROOT = Path(__file__).resolve().parents[1]
DATE = dt.date(2026, 11, 29)
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def cookbook() -> Cookbook:
    return load_cookbook(ROOT / "data" / "cookbook.yaml")


@pytest.fixture(scope="module")
def templates() -> dict[str, str]:
    return read_templates(ROOT / "templates")


@pytest.fixture(scope="module")
def files(cookbook: Cookbook, templates: dict[str, str]) -> dict[str, str]:
    return pages.site_files(cookbook, templates, DATE)


def _cells(cookbook: Cookbook) -> list[Cell]:
    return [cell for page in cookbook.pages for cell in page.cells]


def _replace_cell(cookbook: Cookbook, old: Cell, new: Cell) -> Cookbook:
    new_pages = tuple(p.model_copy(update={"cells": tuple(new if c is old else c for c in p.cells)}) for p in cookbook.pages)
    return cookbook.model_copy(update={"pages": new_pages})


def hostile_cookbook(cookbook: Cookbook) -> Cookbook:
    """The bundled cookbook with markup, pipes and backticks in a label, a note, an exclusion and a command."""
    cell = _cells(cookbook)[-1]
    point = cell.points[0]
    evil = Block(kind="worker", role="agg", title=f'Aggregated "worker" {HOSTILE}', cmd="python3 -m sglang.launch_server",
                 args=(("--model-path", "m"), ("--chat-template", HOSTILE), ("--sep", "a|b"), ("--fence", "```"),
                       ("--subst", "$(touch /tmp/pwned)`id`")),
                 env={"EVIL": "<x>|y"}, where=f"on {HOSTILE} | any node")
    dep = point.deployment.model_copy(update={"blocks": point.deployment.blocks + (evil,)})
    new_point = point.model_copy(update={"deployment": dep})
    new_cell = cell.model_copy(update={
        "label": f"Agg {HOSTILE} | x", "points": (new_point,) + cell.points[1:],
        "notes": cell.notes + (f"note with {HOSTILE} and a|b",),
        "exclusions": cell.exclusions + (Exclusion(path="a|b.c", cls="harness-only", reason=f"r {HOSTILE}", value="x|y`z`", points=("c64",)),)})
    return _replace_cell(cookbook, cell, new_cell)


def _outside_commands(markdown: str) -> str:
    return re.sub(r"(?s)<pre><code>.*?</code></pre>", "", markdown)


def _bash_n(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)


# --- the files --------------------------------------------------------------------------------------

def test_site_files_has_pages_scripts_charts_and_json(cookbook: Cookbook, files: dict[str, str]) -> None:
    page = cookbook.pages[0]
    assert {"index.md", "flags.md", "cookbook.json", f"{page.slug}/index.md", "stylesheets/cookbook.css",
            "javascripts/cookbook.js", "javascripts/iframe-worker-shim.js"} <= set(files)
    scripts = {p for p in files if p.endswith(".sh")}
    launch = {f"{pg.slug}/{pages.script_name(c, p)}" for pg in cookbook.pages for c in pg.cells for p in c.points}
    sbatch = {f"{pg.slug}/{pages.sbatch_name(pages.script_name(c, p))}" for pg in cookbook.pages for c in pg.cells for p in c.points}
    assert scripts == launch | sbatch      # each measured point's launch script and its one-job Slurm script
    assert f"{page.slug}/pareto-gb300-latency.svg" in files and f"{page.slug}/pareto-gb300-interactivity.svg" in files


def test_script_names_follow_cell_and_concurrency(cookbook: Cookbook) -> None:
    cell = _cells(cookbook)[0]
    assert pages.script_name(cell, cell.points[0]) == f"launch-{cell.slug}-c1.sh"
    assert pages.point_anchor(cell, cell.points[0]) == f"{cell.slug}-c1"


def test_every_copy_all_and_script_passes_bash_n(files: dict[str, str]) -> None:
    scripts = [text for path, text in files.items() if path.endswith(".sh")]
    assert scripts
    for text in scripts:
        result = _bash_n(text)
        assert result.returncode == 0, result.stderr


def test_every_launch_script_runs_each_listed_process_alone(cookbook: Cookbook, files: dict[str, str], tmp_path: Path) -> None:
    """With stubs on PATH, `launch-*.sh <process>` execs exactly that block's command: its argv and env, placeholders
    filled in from the environment, NODE_RANK fixed per rank; `--list` names every process."""
    runs = [(p.deployment.blocks, files[f"{page.slug}/{pages.script_name(c, p)}"]) for page in cookbook.pages for c in page.cells for p in c.points]
    assert any(b.nodes_per_worker and b.nodes_per_worker > 1 for blocks, _ in runs for b in blocks)
    for blocks, script in runs:
        names = {n for b in blocks for n in placeholders_in(format_block(b))}
        cluster = {n: f"10.0.{i}.9" for i, n in enumerate(sorted(names)) if n != "NODE_RANK"}
        stubs = {b.cmd.split()[0] for b in blocks}
        procs = processes(list(blocks))
        listed = run_with_stubs(script, "--list", tmp_path, stubs, cluster)[0].stdout
        assert [line.split()[0] for line in listed.splitlines()] == [n for n, *_ in procs]
        for name, index, rank, _ in procs:
            values = {**cluster, "NODE_RANK": str(rank)}
            fill = lambda word: re.sub(r"\$\{?([A-Z][A-Z0-9_]*)\}?", lambda m: values.get(m.group(1), m.group(0)), word)  # noqa: E731
            block = blocks[index]
            run, argv, env = run_with_stubs(script, name, tmp_path, stubs, cluster)
            assert run.returncode == 0, (name, run.stderr)
            assert argv == [fill(w) for w in block_argv(block)[len(block.env):]], name
            assert {k: env.get(k) for k in block.env} == {k: fill(v) for k, v in block.env.items()}, name
            assert all((tmp_path / f).read_text() == fill(c if c.endswith("\n") else c + "\n") for f, c in block.files.items())


def _cell_pages(files: dict[str, str], cookbook: Cookbook) -> str:
    """The Markdown of every deployment page of the first model."""
    page = cookbook.pages[0]
    return "".join(files[pages.cell_path(page, c)] for c in page.cells)


def test_model_page_links_each_deployment_and_its_points(cookbook: Cookbook, files: dict[str, str]) -> None:
    page = cookbook.pages[0]
    md = files[pages.page_path(page)]
    assert "```" not in md                                              # no commands: those are on the deployment pages
    for cell in page.cells:
        assert f"]({cell.slug}/index.md)" in md
        assert all(f'href="{cell.slug}/index.html#{pages.point_anchor(cell, p)}"' in html.unescape(md) for p in cell.points)


def test_deployment_page_has_one_command_block_per_process_in_launch_order(cookbook: Cookbook, files: dict[str, str]) -> None:
    page = cookbook.pages[0]
    for cell in page.cells:
        md = files[pages.cell_path(page, cell)]
        assert f"{{ #{cell.slug} }}" in md
        for point in cell.points:
            anchor = pages.point_anchor(cell, point)
            positions = [md.index(f'<div id="{anchor}-{i}" class="highlight"') for i in range(len(point.deployment.blocks))]
            assert positions == sorted(positions)
            assert f'<div id="{anchor}-all" class="highlight"' in md
            for block in point.deployment.blocks:
                assert all(f"{line}\n" in html.unescape(md) for line in format_block(block).splitlines())


def test_cookbook_json_holds_every_resolved_command(cookbook: Cookbook, files: dict[str, str]) -> None:
    doc = json.loads(files["cookbook.json"])
    assert doc["generated_on"] == "2026-11-29"
    cells = {c["id"]: c for p in doc["pages"] for c in p["cells"]}
    for cell in _cells(cookbook):
        got = cells[cell.id]
        assert got["provenance"]["commit"] == cell.provenance.commit
        for point, jp in zip(cell.points, got["points"]):
            assert [b["text"] for b in jp["blocks"]] == [format_block(b) for b in point.deployment.blocks]
            assert "copy_all" not in jp and files[jp["script"]] == pages.launch_script(cookbook, cell, point, point.deployment, DATE)   # not repeated


def test_home_page_shows_models_by_hardware_with_status_and_date(files: dict[str, str]) -> None:
    home = files["index.md"]
    assert "| Model | GB300 |" in home
    assert "cb-status-verified-pr" in home and "cb-status-in-progress" in home
    assert "latest run 2026-10-16" in home
    assert 'href="deepseek-v4-1-flash/index.html#hardware-gb300"' in html.unescape(home)


def test_cell_shows_provenance_metrics_exclusions_disclosures_notes(cookbook: Cookbook, files: dict[str, str]) -> None:
    text = html.unescape(_cell_pages(files, cookbook))
    assert '<a href="https://github.com/SemiAnalysisAI/InferenceX/actions/runs/38911006463/attempts/1">38911006463, attempt 1</a>' in text
    assert '<a href="https://github.com/SemiAnalysisAI/InferenceX/pull/4180">#4180</a>' in text
    assert "none pinned yet" in text                                  # the in-progress lane
    assert "| Point | Concurrency | Throughput (tok/s/GPU) |" in text
    assert "★ frontier" in text
    assert "| Setting | Class | Reason | Value | Points |" in text
    assert "golden (simulated) acceptance length of 3.51" in text     # disclosure
    assert "--hicache-ratio sizes the host KV tier" in text           # note triggered by a per-host size
    assert "Newer SGLang releases rename --enable-dp-attention" in text   # note on a renamed flag


def test_the_manifests_results_dashboard_is_linked(cookbook: Cookbook, files: dict[str, str]) -> None:
    """Bug: `dashboard:` was accepted in the manifest and then published nowhere."""
    url = "https://inferencex.semianalysis.com/inference?unofficialRun=38911006463"
    pinned = [c for c in _cells(cookbook) if c.provenance.run == 38911006463]
    page = cookbook.pages[0]
    assert pinned and all(f'<a href="{url}">' in html.unescape(files[pages.cell_path(page, c)]) for c in pinned)
    doc = json.loads(files["cookbook.json"])
    assert {c["id"]: c["provenance"]["dashboard"] for p in doc["pages"] for c in p["cells"] if c["provenance"]["run"]} == \
        {c.id: url for c in pinned}


def test_identical_commands_across_concurrencies_are_explained(cookbook: Cookbook, templates: dict[str, str]) -> None:
    cell = _cells(cookbook)[0]
    first, second = cell.points[:2]
    same = cell.model_copy(update={"points": (first, second.model_copy(update={"deployment": first.deployment}))})
    cb = _replace_cell(cookbook, cell, same)
    md = pages.site_files(cb, templates, DATE)[pages.cell_path(cb.pages[0], same)]
    assert md.count("Same commands as c1: the concurrency is a benchmark-client setting") == 1


def test_flag_index_lists_flags_and_env_with_cells(cookbook: Cookbook, files: dict[str, str]) -> None:
    rows = {r.name: r for r in pages.flag_rows(pages.page_flags(p) for p in cookbook.pages)}
    assert rows["--tensor-parallel-size"].kind == "flag"
    cli_flag_cells = [c for c in _cells(cookbook) if c.config_key not in bundled_keys("trt")]     # TRT-LLM takes an options file
    assert len(rows["--tensor-parallel-size"].cells) == len(cli_flag_cells)
    assert rows["NCCL_CUMEM_ENABLE"].kind == "env"
    assert '<a href="deepseek-v4-1-flash/dsv41flash-fp4-gb300-sglang-agentic-dspark-0/index.html">' in files["flags.md"]


# --- escaping ---------------------------------------------------------------------------------------

def test_flag_index_shows_an_empty_value_as_the_command_writes_it(cookbook: Cookbook) -> None:
    """Bug: `--chat-template ''` and `EMPTY=''` were listed as "none (a switch)"."""
    cell = _cells(cookbook)[0]
    point = cell.points[0]
    last = point.deployment.blocks[-1]
    block = last.model_copy(update={"args": last.args + (("--chat-template", ""),), "env": {**last.env, "EMPTY": ""}})
    dep = point.deployment.model_copy(update={"blocks": point.deployment.blocks[:-1] + (block,)})
    cb = _replace_cell(cookbook, cell, cell.model_copy(update={"points": (point.model_copy(update={"deployment": dep}),) + cell.points[1:]}))
    rows = {r.name: r for r in pages.flag_rows(pages.page_flags(p) for p in cb.pages)}
    assert rows["--chat-template"].values == rows["EMPTY"].values == ("''",)
    assert rows["--trust-remote-code"].values == ()                                   # a switch has none


def test_two_configs_of_one_topology_are_told_apart(cookbook: Cookbook, templates: dict[str, str]) -> None:
    """Bug: two configs on one model page and hardware that differ only in precision (fp4, fp8) had the
    same name in the deployments table, the chart's legend, their headings and the flag index."""
    cell = next(c for c in _cells(cookbook) if c.config_key == "dsv41flash-fp4-gb300-sglang-agentic-dspark")
    key = cell.config_key.replace("fp4", "fp8")
    twin = cell.model_copy(update={"id": f"{key}#0", "slug": f"{key}-0", "config_key": key})
    page = cookbook.pages[0]
    cb = cookbook.model_copy(update={"pages": (page.model_copy(update={"cells": page.cells + (twin,)}),) + cookbook.pages[1:]})
    files = pages.site_files(cb, templates, DATE)
    rows = re.findall(r"^\| \[(.*?)\]\((.*?)/index.md\)", files[pages.page_path(page)], re.M)
    names = [html.unescape(name) for name, _ in rows]
    assert len(set(names)) == len(names)
    assert {"Agg TP4 · DSpark 5 · sglang · fp4", "Agg TP4 · DSpark 5 · sglang · fp8", "Agg TP2·EP2 · DSpark 5 · dynamo"} <= set(names)
    headings = [re.search(r"^# (.*)$", files[pages.cell_path(page, c)], re.M).group(1) for c in (cell, twin)]  # type: ignore[union-attr]
    assert len(set(headings)) == 2
    legend = re.findall(r'<text x="26.0"[^>]*>(.*?)</text>', files[f"{page.slug}/pareto-gb300-interactivity.svg"])
    assert len(legend) == len(set(legend)) and "Agg TP4 · DSpark 5 · sglang · fp8" in legend
    flag = next(r for r in pages.flag_rows(pages.page_flags(p) for p in cb.pages) if r.name == "--speculative-dspark-block-size")
    assert len({text for text, _, _ in flag.cells}) == len(flag.cells)


def test_md_filter_writes_markup_and_pipes_as_references() -> None:
    out = str(pages.md(f"{HOSTILE} a|b `c` *d* [e](f)"))
    assert "<" not in out and "|" not in out and "`" not in out and "*" not in out and "[" not in out
    assert out.startswith("&#60;script&#62;")


def test_command_block_is_escaped_html_holding_the_text_exactly() -> None:
    text = "echo ```` '<b>' && x=\"$Y\""
    block = str(pages.command(text, "a", "t <i>", data={"point": 'p"1'}))
    assert block.startswith('<div id="a" class="highlight" data-point="p&#34;1" data-search-exclude><span class="filename">t &lt;i&gt;</span>')
    assert "<b>" not in block and html.unescape(re.search(r"<code>(.*)</code>", block, re.S).group(1)) == text + "\n"


@pytest.mark.parametrize("text", ["a\tb", "a\x1bb", "a\n  \nb"])
def test_command_block_refuses_text_markdown_would_change(text: str) -> None:
    with pytest.raises(CookbookError):
        pages.command(text, "a", "t")


def test_hostile_values_are_escaped_in_markdown_and_exact_in_scripts(cookbook: Cookbook, templates: dict[str, str]) -> None:
    evil = hostile_cookbook(cookbook)
    files = pages.site_files(evil, templates, DATE)
    cell = _cells(evil)[-1]
    page = next(p for p in evil.pages if cell in p.cells)
    md = files[pages.page_path(page)] + files[pages.cell_path(page, cell)]
    outside = _outside_commands(md)
    assert "<script" not in outside and "a|b" not in outside
    script = files[f"{page.slug}/{pages.script_name(cell, cell.points[0])}"]
    assert f"--chat-template '{HOSTILE}'" in script and "--sep 'a|b'" in script
    assert _bash_n(script).returncode == 0
    assert f"<code>{escape(format_block(cell.points[0].deployment.blocks[-1]))}\n</code>" in md


def test_template_error_is_a_located_problem(cookbook: Cookbook, templates: dict[str, str]) -> None:
    broken = {**templates, "flags.md.j2": "# Flags\n\n{% if %}\n"}
    with pytest.raises(CookbookError) as info:
        pages.site_files(cookbook, broken, DATE)
    problem = info.value.problems[0]
    assert (problem.file, problem.line) == ("templates/flags.md.j2", 3)


# --- derived variants -------------------------------------------------------------------------------

def test_variant_data_holds_each_command_once(cookbook: Cookbook, templates: dict[str, str]) -> None:
    derived = with_variants(cookbook)
    cell = next(c for c in _cells(derived) if len(c.variants) > 5)
    page = next(p for p in derived.pages if cell in p.cells)
    md = pages.site_files(derived, templates, DATE)[pages.cell_path(page, cell)]
    data = json.loads(re.search(r'<script type="application/json" class="cb-variants">(.*)</script>', md).group(1))  # type: ignore[union-attr]
    drawn = {v["anchor"]: [data["texts"][b["text"]] for b in v["blocks"]] for v in data["variants"]}
    assert drawn == {pages.variant_anchor(cell, v): [format_block(b) for b in v.deployment.blocks] for v in cell.variants}
    assert len(data["texts"]) == len({t for blocks in drawn.values() for t in blocks}) < sum(map(len, drawn.values()))


def test_derived_variants_are_marked_and_kept_apart(cookbook: Cookbook, templates: dict[str, str]) -> None:
    cell = next(c for c in _cells(cookbook) if c.router == "dynamo")
    point = cell.points[0]
    last = point.deployment.blocks[-1]
    extra = last.model_copy(update={"env": {**last.env, "ONLY_IN_DERIVED": "1"}})
    dep = point.deployment.model_copy(update={"blocks": point.deployment.blocks[:-1] + (extra,)})
    variant = Variant(router="sglang", kv="hicache", point=point.id, deployment=dep)
    cb = _replace_cell(cookbook, cell, cell.model_copy(update={"variants": (variant,)}))
    files = pages.site_files(cb, templates, DATE)
    md = files[pages.cell_path(cb.pages[0], cell)]
    anchor = pages.variant_anchor(cell, variant)
    assert f"{{ #{cell.slug}-derived }}" in md and anchor == f"{cell.slug}-derived-sglang-hicache-c1"
    assert f'<a id="{anchor}" href="../launch-{anchor}.sh" download>' in md and 'cb-badge cb-status-derived"' in md
    data = json.loads(re.search(r'<script type="application/json" class="cb-variants">(.*)</script>', md).group(1))  # type: ignore[union-attr]
    assert [(v["router"], v["kv"], v["anchor"]) for v in data["variants"]] == [("sglang", "hicache", anchor)]
    assert [data["texts"][b["text"]] for b in data["variants"][0]["blocks"]] == [format_block(b) for b in dep.blocks]  # drawn by cookbook.js
    metrics = md[md.index(f"#{cell.slug}-metrics"):md.index(f"#{cell.slug}-settings")]
    assert anchor not in metrics                                         # never in the metrics table
    script = files[f"{cb.pages[0].slug}/launch-{anchor}.sh"]
    assert "# DERIVED, NOT BENCHMARKED" in script and _bash_n(script).returncode == 0
    doc = json.loads(files["cookbook.json"])
    jcell = next(c for p in doc["pages"] for c in p["cells"] if c["id"] == cell.id)
    assert [v["status"] for v in jcell["derived_variants"]] == ["derived"]
    assert len(jcell["points"]) == len(cell.points)
    rows = {r.name: r for r in pages.flag_rows(pages.page_flags(p) for p in cb.pages)}
    assert [derived for _, _, derived in rows["ONLY_IN_DERIVED"].cells] == [True]      # only a variant sets it
    assert all(not derived for _, _, derived in rows["--tensor-parallel-size"].cells)


# --- charts -----------------------------------------------------------------------------------------

def test_frontier_lower_latency_higher_throughput() -> None:
    pts = [ChartPoint("s", "a", 8.0, 7800), ChartPoint("s", "b", 6.0, 10000), ChartPoint("s", "c", 7.0, 29000),
           ChartPoint("s", "d", 7.0, 29000)]
    assert frontier(pts, "lower") == [1, 2, 3]          # a is dominated by b; equal points both stay


def test_frontier_higher_interactivity_higher_throughput() -> None:
    pts = [ChartPoint("s", "a", 600, 7000), ChartPoint("s", "b", 500, 9000), ChartPoint("s", "c", 400, 8000)]
    assert frontier(pts, "higher") == [0, 1]


def test_svg_is_xml_marks_frontier_and_escapes_text() -> None:
    pts = [ChartPoint(f"cell {HOSTILE}", "c1", 1.0, 100.0), ChartPoint("other & co", "c2", 2.0, 50.0)]
    svg = pareto_svg(pts, Axis("p90 latency (s)", "lower"), Axis("tok/s/GPU", "higher"), f"title {HOSTILE}")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert "<script" not in svg
    assert svg.count('class="cb-on-front"') == 1 and svg.count('class="cb-off-front"') == 1


def test_empty_chart_says_so() -> None:
    svg = pareto_svg([], Axis("x", "lower"), Axis("y", "higher"), "t")
    assert "no measured points" in svg and ET.fromstring(svg) is not None


def test_bash_available() -> None:
    assert shutil.which("bash"), "bash is needed for the bash -n checks"
