"""The flag badge of every deployment page, read in Debian's Chromium (Playwright) from the built bundled
site: a cell shows `flags-ok` only when every worker flag was checked against its version or the releases
around its build, and an unchecked cell says why in full (issue 33).

Needs /usr/bin/chromium; the test fails, not skips, without it (as tests/test_browser.py).
"""

from __future__ import annotations

import datetime as dt
import functools
import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.model import Cookbook
from cookbookgen.cells.variants import with_variants
from cookbookgen.flags.check import check_cell
from cookbookgen.publish import site

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cookbook, str]]:
    cookbook = with_variants(load_cookbook(ROOT / "data" / "cookbook.yaml"))
    out = tmp_path_factory.mktemp("badges") / "site"
    site.publish(cookbook, out, dt.date(2026, 11, 29))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield cookbook, f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join()


def test_every_deployment_page_shows_the_badge_its_check_earns(built: tuple[Cookbook, str]) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's Chromium (apt-get install -y chromium) to run the browser tests")
    from playwright.sync_api import sync_playwright

    cookbook, server = built
    shown: dict[str, tuple[str, str]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        for model in cookbook.pages:
            for cell in model.cells:
                page.goto(f"{server}/{model.slug}/{cell.slug}/index.html")
                badge = page.locator('span[class*="cb-status-flags-"]')
                assert badge.count() == 1, cell.id
                line = badge.locator("xpath=..").inner_text()            # the provenance line: "Flags <badge> <sentence>"
                shown[cell.id] = (badge.inner_text().strip(), line.split(badge.inner_text(), 1)[1].strip())
        browser.close()
    unchecked = 0
    for model in cookbook.pages:
        for cell in model.cells:
            check = check_cell(cell.id, cell.image, (b for p in cell.points for b in p.deployment.blocks))
            word, sentence = shown[cell.id]
            assert word == check.badge, cell.id
            if check.coverage == "unchecked":
                unchecked += 1
                assert word != "flags-ok" and sentence.startswith("not checked:") and sentence == check.summary, cell.id
            if word in ("flags-ok", "flags-deprecated"):
                assert sentence.startswith("every worker flag is accepted by ") and len(sentence) > len("every worker flag is accepted by ") + 5
    # the vLLM (a nightly named only by its commit) and TRT-LLM (no catalog) lanes are the unchecked ones
    assert {c for c, (w, _) in shown.items() if w == "flags-unchecked"} == {
        c.id for m in cookbook.pages for c in m.cells if "vllm" in c.config_key or "trt" in c.config_key} and unchecked == 4
