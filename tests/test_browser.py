"""The built site in Debian's Chromium (Playwright): tabs, copy buttons, clipboard, search, no JS.

Needs /usr/bin/chromium (`apt-get install -y chromium`); the test fails, not skips, without it.
The site is served by `http.server` on 127.0.0.1; every request elsewhere is blocked and reported.
Screenshots go to test-output/: browser.png (the copied block), browser-<width>-<page>.png (every page at
1400x1000 and 390x844).
"""

from __future__ import annotations

import datetime as dt
import functools
import http.server
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.model import Cell, Cookbook
from cookbookgen.cells.variants import with_variants
from cookbookgen.publish import pages, site
from cookbookgen.render.shell import format_block

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP cookbook.test 127.0.0.1"]
SCREENSHOT = ROOT / "test-output" / "browser.png"
B200_KEY = "dsv41flash-fp4-b200-sglang-agentic-dspark"
B200_MASTER = f"""
{B200_KEY}:
  image: lmsysorg/sglang:nightly-dev-cu13-20261012-e6072935
  model: deepseek-ai/DeepSeek-V4.1-Flash
  model-prefix: dsv41flash
  runner: cluster:gb300-nv
  precision: fp4
  framework: sglang
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.80
      search-space:
      - {{ tp: 4, ep: 1, kv-offloading: none, spec-decoding: dspark, conc-list: [1, 4], srt-recipe: benchmarks/single_node/srt-slurm-recipes/dsv41flash/sglang/b200-fp4-mtp/agentic.yaml }}
"""
B200_MANIFEST = {"key": B200_KEY, "commit": "e182134fd",
                 "metrics": {"tp4/c1": {"throughput_per_gpu": 5100, "p90_interactivity": 480.0},
                             "tp4/c4": {"throughput_per_gpu": 7200, "p90_interactivity": 390.0}}}


def two_hardware_data(tmp: Path) -> Path:
    """The bundled data plus a B200 config (a copy of the standalone lane with gpu_type b200)."""
    data = tmp / "data"
    shutil.copytree(ROOT / "data", data)
    e2e = data / "inferencex" / "inferencex-e2e"
    recipes = e2e / "benchmarks" / "single_node" / "srt-slurm-recipes" / "dsv41flash" / "sglang"
    src = (recipes / "gb300-fp4-mtp" / "agentic.yaml").read_text()
    assert "gpu_type: gb300" in src
    (recipes / "b200-fp4-mtp").mkdir()
    (recipes / "b200-fp4-mtp" / "agentic.yaml").write_text(src.replace("gpu_type: gb300", "gpu_type: b200"))
    with (e2e / "configs" / "nvidia-master.yaml").open("a") as f:
        f.write(B200_MASTER)
    manifest = yaml.safe_load((data / "cookbook.yaml").read_text())
    manifest["pages"][0]["configs"].append(B200_MANIFEST)                # on the DeepSeek page, after the GB300 lanes
    (data / "cookbook.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return data / "cookbook.yaml"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def two_hw(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cookbook, Path]:
    tmp = tmp_path_factory.mktemp("browser")
    manifest = two_hardware_data(tmp)
    cookbook = with_variants(load_cookbook(manifest))     # as `cookbookgen build` publishes it
    assert cookbook.pages[0].hardware[0] == "gb300" and cookbook.pages[0].hardware[-1] == "b200"
    site.publish(cookbook, tmp / "site", dt.date(2026, 11, 29))
    return cookbook, tmp / "site"


@pytest.fixture(scope="module")
def server(two_hw: tuple[Cookbook, Path]) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(two_hw[1]))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's Chromium (apt-get install -y chromium) to run the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


def _watch(context: object, page: object, origin: str) -> tuple[list[str], list[str]]:
    """Console errors and page errors, and requests that tried to leave `origin` (blocked)."""
    errors: list[str] = []
    outside: list[str] = []

    def route(r: object) -> None:
        url = r.request.url  # type: ignore[attr-defined]
        if url.startswith(origin) or url.startswith("file:"):
            r.continue_()  # type: ignore[attr-defined]
        else:
            outside.append(url)
            r.abort()  # type: ignore[attr-defined]

    context.route("**/*", route)  # type: ignore[attr-defined]
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: errors.append(str(e)))  # type: ignore[attr-defined]
    return errors, outside


def _b200_cell(cookbook: Cookbook) -> Cell:
    return next(c for c in cookbook.pages[0].cells if c.hw == "b200")


def _cell_url(server: str, cookbook: Cookbook, cell: Cell) -> str:
    return f"{server}/{cookbook.pages[0].slug}/{cell.slug}/index.html"


def _below_the_header(page: object, element: object, within: float | None = None) -> bool:
    """Whether the top of `element` is on screen (or `within` pixels of the top), below Material's sticky header."""
    header = page.locator("header.md-header").bounding_box()  # type: ignore[attr-defined]
    box = element.bounding_box()  # type: ignore[attr-defined]
    height = page.viewport_size["height"]  # type: ignore[attr-defined]
    if header is None or box is None:
        return False
    top = header["y"] + header["height"]
    return top <= box["y"] < (top + within if within is not None else height)


def test_a_deployments_blocks_are_two_clicks_from_the_model_page(two_hw: tuple[Cookbook, Path], server: str, browser: object) -> None:
    cookbook, _ = two_hw
    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    errors, outside = _watch(context, page, server)
    page.goto(f"{server}/{cookbook.pages[0].slug}/index.html")

    cell = _b200_cell(cookbook)
    point = cell.points[1]                                     # c4: not the default tab
    block_index = len(point.deployment.blocks) - 1             # the worker
    anchor = pages.point_anchor(cell, point)
    page.click(f'a[href="{cell.slug}/index.html"]')                       # click 1: the deployment
    page.click(f'label[for="{anchor}"]')                                  # click 2: its concurrency
    block = page.locator(f"#{anchor}-{block_index}")
    assert block.is_visible()
    block.hover()
    block.locator("button.md-clipboard").click()
    assert page.evaluate("navigator.clipboard.readText()") == format_block(point.deployment.blocks[block_index])
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))                                 # the cell, c4 tab, copied block
    assert errors == [] and outside == []
    context.close()


def test_copy_all_button_copies_the_script(two_hw: tuple[Cookbook, Path], server: str, browser: object) -> None:
    cookbook, out = two_hw
    context = browser.new_context()  # type: ignore[attr-defined]
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    errors, outside = _watch(context, page, server)
    cell = cookbook.pages[0].cells[0]
    point = cell.points[0]
    anchor = pages.point_anchor(cell, point)
    page.goto(f"{_cell_url(server, cookbook, cell)}#{anchor}-all")        # opens the collapsed "Copy all"
    block = page.locator(f"#{anchor}-all")
    block.hover()
    block.locator("button.md-clipboard").click()
    script = (out / cookbook.pages[0].slug / pages.script_name(cell, point)).read_text()
    assert page.evaluate("navigator.clipboard.readText()") == script.rstrip("\n")
    assert errors == [] and outside == []
    context.close()


def test_deep_links_open_the_combination(two_hw: tuple[Cookbook, Path], server: str, browser: object) -> None:
    cookbook, _ = two_hw
    cell = next(c for c in cookbook.pages[0].cells if len(c.points) > 2 and c.variants)
    context = browser.new_context()  # type: ignore[attr-defined]
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    for point in cell.points:
        anchor = pages.point_anchor(cell, point)
        page.goto(f"{_cell_url(server, cookbook, cell)}#{anchor}")
        assert page.locator(f'input[id="{anchor}"]').is_checked()
        assert page.locator(f"#{anchor}-0").is_visible()
        assert [page.locator(f"#{pages.point_anchor(cell, p)}-0").is_visible() for p in cell.points].count(True) == 1
    variant = cell.variants[-1]
    anchor = pages.variant_anchor(cell, variant)
    page.goto(f"{_cell_url(server, cookbook, cell)}#{anchor}")
    shown = page.locator("[data-variant-block]")
    assert shown.count() == len(variant.deployment.blocks)
    assert shown.first.get_attribute("data-variant-block") == f"{anchor}-0"
    assert [shown.nth(i).inner_text() for i in range(shown.count())] == [format_block(b) for b in variant.deployment.blocks]
    assert [page.locator(f".cb-selectors select >> nth={i}").input_value() for i in range(2)] == [variant.router, variant.kv]
    assert _below_the_header(page, page.locator(".cb-selectors"))        # the router and KV tier shown, not under the header
    page.locator(".cb-variant-view button.cb-copy").last.click()          # a derived block's copy button: just its command
    assert page.evaluate("navigator.clipboard.readText()") == format_block(variant.deployment.blocks[-1])
    checked = "[...document.querySelectorAll('.tabbed-set input')].map(i => i.checked)"
    before = page.evaluate(checked)
    page.locator(".cb-selectors select >> nth=2").select_option(pages.variant_tab(cell, cell.variants[0]))
    assert page.evaluate(checked) == before and True in before            # the measured tabs are untouched
    context.close()


@pytest.mark.parametrize("width,height", [(1400, 1000), (390, 844)])
def test_a_derived_variants_link_opens_at_its_commands(two_hw: tuple[Cookbook, Path], server: str, browser: object,
                                                       width: int, height: int) -> None:
    """A shared link to a derived variant, opened afresh, shows its router/KV selectors at the top with its
    commands below (bug: the browser's own jump to the variants table's link came last, so on a phone the
    commands were below the screen)."""
    cookbook, _ = two_hw
    cell = next(c for c in cookbook.pages[0].cells if c.variants)
    context = browser.new_context(viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    errors, outside = _watch(context, page, server)
    for variant in (cell.variants[0], cell.variants[-1]):
        page.goto(f"{server}/index.html")
        page.goto(f"{_cell_url(server, cookbook, cell)}#{pages.variant_anchor(cell, variant)}")
        page.wait_for_load_state("load")
        assert _below_the_header(page, page.locator(".cb-selectors"), within=40)
    assert errors == [] and outside == []
    context.close()


def test_query_links_open_the_combination(two_hw: tuple[Cookbook, Path], server: str, browser: object) -> None:
    """?conc=&router=&kv= opens a measured tab, or a derived variant drawn from the page's data."""
    cookbook, _ = two_hw
    cell = next(c for c in cookbook.pages[0].cells if len(c.points) > 2 and c.variants)
    point = cell.points[1]
    conc = point.concs[0]
    page = browser.new_context().new_page()  # type: ignore[attr-defined]
    url = _cell_url(server, cookbook, cell)
    for query in (f"conc={conc}", f"conc={conc}&router={cell.router}&kv={cell.kv}"):     # the measured combination
        page.goto(f"{url}?{query}")
        anchor = pages.point_anchor(cell, point)
        assert page.locator(f'input[id="{anchor}"]').is_checked(), query
        assert page.locator(f"#{anchor}-0").is_visible(), query
        assert page.evaluate("location.hash") == f"#{anchor}"
    variant = next(v for v in cell.variants if v.point in (point.id, point.label) and (v.router, v.kv) != (cell.router, cell.kv))
    page.goto(f"{url}?conc={conc}&router={variant.router}&kv={variant.kv}")
    shown = page.locator("[data-variant-block]")
    assert [shown.nth(i).inner_text() for i in range(shown.count())] == [format_block(b) for b in variant.deployment.blocks]
    assert shown.first.get_attribute("data-variant-block") == f"{pages.variant_anchor(cell, variant)}-0"
    selected = [page.locator(f".cb-selectors select >> nth={i}").input_value() for i in range(3)]
    assert selected == [variant.router, variant.kv, pages.variant_tab(cell, variant)]
    page.goto(f"{url}?conc=999999&router={variant.router}")                               # not on this page: left as it is
    assert page.evaluate("location.hash") == "" and page.locator(f'input[id="{pages.point_anchor(cell, cell.points[0])}"]').is_checked()
    page.context.close()


def test_derived_copy_buttons_work_on_a_plain_http_host(two_hw: tuple[Cookbook, Path], server: str, browser: object) -> None:
    """A site served over http from a host name (a cluster's web server, `serve --host 0.0.0.0`) is not a
    secure context: no navigator.clipboard. The derived blocks' copy buttons still copy, as Material's do
    (bug: they called navigator.clipboard.writeText and threw)."""
    cookbook, _ = two_hw
    cell = next(c for c in cookbook.pages[0].cells if c.variants)
    variant = cell.variants[0]
    insecure = server.replace("127.0.0.1", "cookbook.test")
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    errors, outside = _watch(context, page, insecure)
    page.goto(_cell_url(insecure, cookbook, cell) + f"#{pages.variant_anchor(cell, variant)}")
    assert page.evaluate("window.isSecureContext") is False
    page.locator(".cb-variant-view button.cb-copy").last.click()
    reader = browser.new_context()  # type: ignore[attr-defined]    # the clipboard, read where the browser allows it
    reader.grant_permissions(["clipboard-read"], origin=server)
    read = reader.new_page()
    read.goto(f"{server}/index.html")
    assert read.evaluate("navigator.clipboard.readText()") == format_block(variant.deployment.blocks[-1])
    assert errors == [] and outside == []
    reader.close()
    context.close()


# per visible block title: how often its text (without the "N. ") appears in its tab or section
_TITLE_COUNTS = """[...document.querySelectorAll('.md-content .filename')].filter(t => t.checkVisibility()).map(t => {
  const title = t.textContent.trim().replace(/^[0-9]+[.] /, '');
  const box = t.closest('.tabbed-block, .cb-variant-view, article');
  return box.innerText.split(title).length - 1; })"""


@pytest.mark.parametrize("width,height", [(1400, 1000), (390, 844)])
def test_page_weights_heights_and_titles(two_hw: tuple[Cookbook, Path], server: str, browser: object, width: int, height: int) -> None:
    """Every page under 400 KB with at most 60 code blocks visible; the model page about three screens
    on a desktop; each block title printed once; on a phone nothing scrolls sideways but code."""
    cookbook, out = two_hw
    context = browser.new_context(viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    errors, outside = _watch(context, page, server)
    htmls = sorted(out.rglob("*.html"))
    assert len(htmls) >= 3 + len(cookbook.pages[0].cells)
    for path in htmls:
        rel = path.relative_to(out).as_posix()
        assert path.stat().st_size < 400_000, rel
        page.goto(f"{server}/{rel}")
        visible = page.evaluate("[...document.querySelectorAll('pre code')].filter(c => c.checkVisibility()).length")
        assert visible <= 60, rel
        assert all(n == 1 for n in page.evaluate(_TITLE_COUNTS)), rel          # each block's title printed once
        assert page.evaluate("document.documentElement.scrollWidth") <= width, rel
        page.screenshot(path=str(SCREENSHOT.with_name(f"browser-{width}-{rel.replace('/', '_')}.png")), full_page=False)
    page.goto(f"{server}/{cookbook.pages[0].slug}/index.html")
    # chart text as drawn: the smallest font of the SVG scaled to the image's width on screen
    scales = page.evaluate("[...document.querySelectorAll('img.cb-chart')].map(i => i.clientWidth / i.naturalWidth)")
    svg = next((out / cookbook.pages[0].slug).glob("pareto-*.svg")).read_text()
    smallest = min(int(px) for px in re.findall(r"font-size:([0-9]+)px", svg))
    assert scales and min(scales) * smallest >= 9, (scales, smallest)
    model_height = page.evaluate("document.documentElement.scrollHeight")
    print(f"{width}x{height}: model page {model_height} px")
    if width > 1000:
        assert model_height <= 3.5 * height
    page.goto(f"{server}/flags.html")                                     # one line per flag, opening to its details
    assert page.evaluate("document.documentElement.scrollHeight") <= 10 * height
    assert errors == [] and outside == []
    context.close()


def test_search_works_offline(two_hw: tuple[Cookbook, Path], server: str, browser: object) -> None:
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    errors, outside = _watch(context, page, server)
    page.goto(f"{server}/index.html")
    page.click(".md-search__input")
    page.keyboard.type("hicache", delay=20)
    page.wait_for_selector(".md-search-result__item")
    assert page.locator(".md-search-result__item").count() >= 1
    assert errors == [] and outside == []
    context.close()


@pytest.mark.parametrize("flag", ["--mem-fraction-static", "--speculative-dspark-block-size", "--speculative-dspark-bl"])
def test_search_finds_a_flag_as_commands_write_it(two_hw: tuple[Cookbook, Path], server: str, browser: object, flag: str) -> None:
    """A flag, typed or pasted from a command (or its start), has the flag index as its first result (bugs:
    the search's query language read the leading '-' as "must not contain" and found nothing; without the
    dashes any one part of the name matched, and pages naming `dspark` often came first); a single '-' still excludes."""
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    errors, outside = _watch(context, page, server)
    page.goto(f"{server}/index.html")
    page.click(".md-search__input")
    page.keyboard.type(flag, delay=10)
    assert "flags.html" in _settled_results(page)[0]
    page.fill(".md-search__input", "")
    page.keyboard.type("hicache -flag", delay=10)
    assert not any("flags.html" in href for href in _settled_results(page))
    assert errors == [] and outside == []
    context.close()


def _settled_results(page: Any) -> list[str]:
    """The search results' links once the last query's results are shown: the list of an earlier, shorter
    query can be on screen for a moment after the last key, so it is read until two reads agree."""
    page.wait_for_selector(".md-search-result__item")
    before: list[str] = []
    for _ in range(120):
        now = page.eval_on_selector_all(".md-search-result__item a", "links => links.map(a => a.getAttribute('href') || '')")
        if now and now == before:
            return now
        before = now
        page.wait_for_timeout(250)
    raise AssertionError(f"the search results kept changing: {before}")


@pytest.mark.parametrize("query,name", [("--mem-fraction-static", "--mem-fraction-static"), ("--mem-fraction", "--mem-fraction-static"),
                                        ("SGLANG_DSV41_REASONING_EFFORT", "SGLANG_DSV41_REASONING_EFFORT")])
def test_a_flag_found_by_search_is_shown_open(two_hw: tuple[Cookbook, Path], server: str, browser: object, query: str, name: str) -> None:
    """Bug: the search led to the top of the flag index with every flag folded, the one searched for
    screens further down; now it is open and scrolled into view."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page = context.new_page()
    errors, outside = _watch(context, page, server)
    page.goto(f"{server}/index.html")
    page.click(".md-search__input")
    page.keyboard.type(query, delay=10)
    page.locator(".md-search-result__item a[href*='flags.html']").first.click()
    page.wait_for_load_state()
    flag = page.locator("details.cb-flag").filter(has=page.locator("summary code", has_text=re.compile(f"^{re.escape(name)}$")))
    assert flag.evaluate("d => d.open") and flag.locator("li a").first.is_visible()
    assert _below_the_header(page, flag)
    assert page.locator("details.cb-flag[open]").count() == 1
    assert errors == [] and outside == []
    context.close()


def test_search_works_from_file_urls(two_hw: tuple[Cookbook, Path], browser: object) -> None:
    _, out = two_hw
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    errors, outside = _watch(context, page, "file:")
    page.goto((out / "index.html").as_uri())
    page.click(".md-search__input")
    page.keyboard.type("hicache", delay=20)
    page.wait_for_selector(".md-search-result__item")
    assert errors == [] and outside == []
    context.close()


def test_commands_are_readable_without_javascript(two_hw: tuple[Cookbook, Path], server: str, browser: object) -> None:
    cookbook, _ = two_hw
    context = browser.new_context(java_script_enabled=False)  # type: ignore[attr-defined]
    page = context.new_page()
    cell = _b200_cell(cookbook)
    page.goto(_cell_url(server, cookbook, cell))
    point = cell.points[1]
    anchor = pages.point_anchor(cell, point)
    page.click(f'label[for="{anchor}"]')                                 # CSS-only radio tabs
    code = page.locator(f"#{anchor}-0 code")
    assert code.is_visible()
    assert code.inner_text().rstrip("\n") == format_block(point.deployment.blocks[0])
    for p in cell.points:                                                # every measured combination is in the HTML
        assert page.locator(f"#{pages.point_anchor(cell, p)}-0 code").count() == 1
    assert page.locator(f'a[id="{pages.variant_anchor(cell, cell.variants[0])}"][download]').count() == 1
    context.close()
