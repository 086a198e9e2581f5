"""The bundled site on a phone (390 px wide, Chromium): every table that is wider than the screen scrolls
inside a box that shows it can (a shadow on the edge with more beyond, a visible scrollbar), nothing is
clipped, and inline code (model ids, images, recipe paths) wraps only after a separator, never inside a
word. Needs /usr/bin/chromium, as tests/test_browser.py does; fails, not skips, without it.
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
from cookbookgen.project import EXAMPLE_MANIFEST, bundled
from cookbookgen.publish import site

from test_browser import ARGS, CHROMIUM, _Quiet

PHONE = {"width": 390, "height": 844}

# Per scroll box holding a table or a long code value: whether it overflows, and how it shows it.
_BOXES = """() => {
  const out = [];
  for (const el of document.querySelectorAll("article table, article code.cb-nobreak")) {
    if (el.tagName === "CODE" && el.closest("table")) continue;     // its table is the box that scrolls
    if (!el.getClientRects().length) continue;                      // in a closed tab or section
    let box = el.tagName === "TABLE" ? el.closest(".md-typeset__scrollwrap") || el.parentElement : el;
    const style = getComputedStyle(box);
    const r = box.getBoundingClientRect();
    out.push({
      what: (el.tagName === "TABLE" ? "table: " + (el.querySelector("th") || el).textContent : "code: " + el.textContent).slice(0, 60),
      overflows: box.scrollWidth > box.clientWidth + 1,
      scrolls: ["auto", "scroll"].includes(style.overflowX),
      shadow: /gradient/.test(style.backgroundImage) && /local/.test(style.backgroundAttachment),
      scrollbar: style.scrollbarWidth === "thin" || box.offsetHeight - box.clientHeight >= 4,
      inside: r.left >= -1 && r.right <= window.innerWidth + 1,
    });
  }
  return out;
}"""

# Per inline code element that wraps onto two or more lines: the characters before each break.
_BREAKS = r"""() => {
  const out = [];
  for (const code of document.querySelectorAll("article :not(pre) > code")) {
    if (code.getClientRects().length < 2) continue;
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let last = null, prev = "";
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i); range.setEnd(node, i + 1);
        const rect = range.getBoundingClientRect();
        if (rect.width === 0) { if (/\s/.test(node.data[i])) prev = " "; continue; }
        if (last !== null && rect.top > last + 2) out.push({code: code.textContent, before: prev, after: node.data[i]});
        last = rect.top; prev = node.data[i];
      }
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def phone_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cookbook, Path]:
    cookbook = with_variants(load_cookbook(bundled(EXAMPLE_MANIFEST)))
    out = tmp_path_factory.mktemp("phone") / "site"
    site.publish(cookbook, out, dt.date(2026, 12, 7))
    return cookbook, out


@pytest.fixture(scope="module")
def phone(phone_site: tuple[Cookbook, Path]) -> Iterator[tuple[object, str]]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's Chromium (apt-get install -y chromium) to run the browser tests")
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_Quiet, directory=str(phone_site[1]))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = chromium.new_context(viewport=PHONE, device_scale_factor=1)
        yield context.new_page(), f"http://127.0.0.1:{httpd.server_port}"
        chromium.close()
    httpd.shutdown()
    thread.join()


def _pages(cookbook: Cookbook) -> list[str]:
    paths = ["index.html", "flags.html"]
    for page in cookbook.pages:
        paths.append(f"{page.slug}/index.html")
        paths += [f"{page.slug}/{cell.slug}/index.html" for cell in page.cells]
    return paths


def test_no_table_is_clipped_without_a_sign_that_it_scrolls(phone: tuple[object, str], phone_site: tuple[Cookbook, Path]) -> None:
    page, origin = phone
    problems, overflowing = [], 0
    for path in _pages(phone_site[0]):
        page.goto(f"{origin}/{path}")  # type: ignore[attr-defined]
        for box in page.evaluate(_BOXES):  # type: ignore[attr-defined]
            if not box["inside"]:
                problems.append(f"{path}: {box['what']!r} runs past the screen's edge")
            if box["overflows"]:
                overflowing += 1
                if not (box["scrolls"] and box["shadow"] and box["scrollbar"]):
                    problems.append(f"{path}: {box['what']!r} is wider than its box with no sign it scrolls: {box}")
    # the model pages' deployment tables and the deployment pages' settings tables are wider than a phone
    assert overflowing >= 3 and not problems, "\n".join(problems[:20])


def test_names_in_code_break_only_after_a_separator(phone: tuple[object, str], phone_site: tuple[Cookbook, Path]) -> None:
    page, origin = phone
    problems, wrapped = [], 0
    for path in _pages(phone_site[0]):
        page.goto(f"{origin}/{path}")  # type: ignore[attr-defined]
        for br in page.evaluate(_BREAKS):  # type: ignore[attr-defined]
            wrapped += 1
            if br["before"] not in "/:@_-. ,":
                problems.append(f"{path}: {br['code']!r} breaks between {br['before']!r} and {br['after']!r}")
    assert wrapped and not problems, "\n".join(problems[:20])
