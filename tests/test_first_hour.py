"""A newcomer's first hour (issue 34), each finding a test: the README's commands work as written, the
whole-deployment scripts are one click from the top of a deployment page, `--list` names each process's
own node, and every sentence cookbookgen writes (every page of the bundled site, every launch script's
`--list`, every CLI message these tests trigger) reads as a finished sentence: numbers agree with their
nouns, no word dangles, no word is doubled.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.model import Cookbook
from cookbookgen.cells.variants import with_variants
from cookbookgen.project import EXAMPLE_MANIFEST, bundled
from cookbookgen.publish import pages, site

ROOT = Path(__file__).resolve().parents[1]
COOKBOOKGEN = [sys.executable, "-m", "cookbookgen.cli"]

# --- the prose checks ------------------------------------------------------------------------------

_COUNTED = "GPU|node|worker|point|config|cell|process|finding|replica|instance|page|setting|flag|variant|script|file|deployment|tier|name"
_ONE_PLURAL = re.compile(rf"(?<![\d.,/-])1 (?:{_COUNTED})s\b")
_MANY_SINGULAR = re.compile(r"(?<![\d.,/-])(?:0|[2-9]|[1-9]\d+) (?:worker|point|config|cell|process|finding|replica|instance|page|variant|script|file|deployment)\b(?![s'’-])")
_DANGLING = re.compile(r"\b(?:by|of|to|the|a|an|with|for|from|than|and|or|is|are)\s*(?:[,;)]|$)", re.I)   # "one of: x" introduces a list
_DOUBLED = re.compile(r"(?<![\w-])([A-Za-z]+) \1(?![\w-])", re.I)


def prose_problems(text: str) -> list[str]:
    """What reads wrong in one piece of generated prose (a paragraph, a list item, a message line)."""
    found = [f"number: {m.group(0)!r}" for m in (*_ONE_PLURAL.finditer(text), *_MANY_SINGULAR.finditer(text))]
    found += [f"dangling: {m.group(0)!r}" for m in _DANGLING.finditer(text)]
    found += [f"doubled: {m.group(0)!r}" for m in _DOUBLED.finditer(text)]
    return found


@pytest.mark.parametrize(("text", "problem"), [
    ("on one node (1 GPUs)", "number"), ("every flag is accepted by ", "dangling"), ("Run run 3, attempt 1", "doubled"),
    ("4 worker on 2 nodes", "number"), ("every flag is accepted by sglang 0.5.23.", None), ("on one node (1 GPU)", None),
    ("4 GPU nodes, 1 of 2", None), ("a node's 2 workers", None),
])
def test_the_prose_checks_catch_what_the_issue_found(text: str, problem: str | None) -> None:
    found = prose_problems(text)
    assert (found[0].split(":")[0] if found else None) == problem, found


class _Prose(HTMLParser):
    """The text of each paragraph, list item, cell, heading and chart label of a page's article, with
    commands (`pre`, `code`) left out; `self.units` is what `prose_problems` reads."""

    UNIT = {"p", "li", "td", "th", "h1", "h2", "h3", "summary", "figcaption", "caption", "title", "desc", "text"}
    SKIP = {"pre", "code", "script", "style"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.article = 0
        self.skip = 0
        self.parts: list[str] = []
        self.units: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.article += tag == "article"
        if tag in self.SKIP:
            self.skip += 1
            self.parts.append(" ⟨code⟩ ")
        if tag in self.UNIT:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in self.SKIP
        if tag in self.UNIT or tag == "article":
            self._flush()
        self.article -= tag == "article"

    def handle_data(self, data: str) -> None:
        if self.article and not self.skip:
            self.parts.append(data.replace("¶", ""))

    def _flush(self) -> None:
        text = " ".join("".join(self.parts).split())
        if text:
            self.units.append(text)
        self.parts = []


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cookbook, Path]:
    cookbook = with_variants(load_cookbook(bundled(EXAMPLE_MANIFEST)))     # as `cookbookgen build` publishes it
    out = tmp_path_factory.mktemp("first-hour") / "site"
    site.publish(cookbook, out, dt.date(2026, 12, 7))
    return cookbook, out


def test_every_sentence_of_the_built_site_reads_finished(built: tuple[Cookbook, Path]) -> None:
    problems = []
    pages_read = 0
    for html in sorted(built[1].rglob("*.html")):
        parser = _Prose()
        parser.feed(html.read_text())
        pages_read += 1
        problems += [f"{html.relative_to(built[1])}: {p} in {unit!r}" for unit in parser.units for p in prose_problems(unit)]
    for svg in sorted(built[1].rglob("*.svg")):
        parser = _Prose()
        parser.article = 1
        parser.feed(svg.read_text())
        problems += [f"{svg.relative_to(built[1])}: {p} in {unit!r}" for unit in parser.units for p in prose_problems(unit)]
    assert pages_read > 10 and not problems, "\n".join(problems[:30])


def test_every_launch_script_lists_each_process_where_it_runs(built: tuple[Cookbook, Path]) -> None:
    """`--list` names each process's own node: no "(1 of 2)" after a sentence about all the copies, no
    "on the workers node" (an apostrophe the script's text filter dropped), no "(1 GPUs)"."""
    problems = []
    scripts = sorted(built[1].rglob("launch-*.sh"))
    for script in scripts:
        listed = subprocess.run(["bash", str(script), "--list"], capture_output=True, text=True, check=True).stdout
        for line in listed.splitlines():
            where = line.split(None, 1)[1]
            problems += [f"{script.name}: {p} in {line!r}" for p in prose_problems(where)]
            if re.search(r"\(\d+ of \d+\)", where) or "workers node" in where or "each of the" in where and "node" in line.split()[0]:
                problems.append(f"{script.name}: {line!r}")
    assert scripts and not problems, "\n".join(problems[:30])


def test_list_names_the_node_and_gpus_of_each_copy(tmp_path: Path) -> None:
    out = tmp_path / "launch.sh"
    subprocess.run([*COOKBOOKGEN, "render", "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg", "--point", "c1228",
                    "--format", "sh", "--out", str(out)], check=True)
    listed = subprocess.run([str(out), "--list"], capture_output=True, text=True, check=True).stdout   # executable as written
    lines = {line.split()[0]: line.split(None, 1)[1] for line in listed.splitlines()}
    assert lines["prefill-0"] == "on prefill node 1, GPUs 0,1" and lines["prefill-1"] == "on prefill node 2, GPUs 0,1"
    assert lines["prefill-2"] == "on prefill node 1, GPUs 2,3"
    assert lines["decode-0-node3"] == "node 4 of the 4 nodes of this decode worker, NODE_RANK=3"
    router = subprocess.run([*COOKBOOKGEN, "render", "--config", "dsv41flash-fp4-gb300-sglang-agentic-dspark", "--point", "c64",
                             "--format", "sh"], capture_output=True, text=True, check=True).stdout
    listed = subprocess.run(["bash", "-c", router, "launch.sh", "--list"], capture_output=True, text=True).stdout
    assert "router  on the node of the worker (it reaches the worker at 127.0.0.1)" in listed


# --- the whole deployment, one click from the top ---------------------------------------------------

def test_the_whole_deployment_is_one_click_from_the_top_and_in_the_toc(built: tuple[Cookbook, Path]) -> None:
    cookbook, out = built
    for page in cookbook.pages:
        for cell in page.cells:
            html = (out / page.slug / cell.slug / "index.html").read_text()
            article = html[html.index("<article"):]
            launch = article.index(f'id="{cell.slug}-launch"')
            assert launch < article.index("Provenance"), cell.slug            # above the provenance card
            toc = html[html.index('class="md-nav md-nav--secondary"'):html.index("<article")]
            assert f'href="#{cell.slug}-launch"' in toc, cell.slug
            for point in cell.points:
                script = pages.script_name(cell, point)
                for name in (script, pages.sbatch_name(script)):
                    assert f'download href="../{name}"' in article[launch:launch + 20000] and (out / page.slug / name).is_file()
                assert f'href="#{pages.point_anchor(cell, point)}-all"' in article[launch:launch + 20000]
                assert f'id="{pages.point_anchor(cell, point)}-all"' in article            # the Copy all block it opens


# --- the README, as written --------------------------------------------------------------------------

def _readme_commands() -> list[str]:
    """Every `cookbookgen` command of the README's bash blocks, and the launch script it writes, in order."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            commands += [part.strip() for part in line.split("&&") if part.strip().startswith(("cookbookgen ", "./"))]
    return commands


def test_the_readme_commands_work_as_written_from_another_folder(tmp_path: Path) -> None:
    """From a fresh folder, as a new user runs them: each exits as the README says (`flags` exits 1 when
    a flag would be refused; `serve` is a server, started and stopped)."""
    commands = _readme_commands()
    assert "cookbookgen build" in commands and "cookbookgen diff --cookbook site" in commands and "./launch.sh --list" in commands
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    assert shutil.which("cookbookgen", path=env["PATH"])
    for command in commands:
        if command.startswith("cookbookgen serve"):     # on a free port: another server may hold 8000 here
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            server = subprocess.Popen(shlex.split(command.replace("--port 8000", f"--port {port}")), cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                assert server.wait(timeout=3) is None
            except subprocess.TimeoutExpired:
                pass
            finally:
                server.terminate()
                server.wait()
            continue
        run = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)
        allowed = (0, 1) if command.startswith("cookbookgen flags") else (0,)
        assert run.returncode in allowed and "error" not in run.stderr, f"{command}: {run.returncode}\n{run.stderr}"


# --- honest numbers, comparable charts, titles and links ----------------------------------------------

def test_a_simulated_acceptance_length_is_beside_the_throughput_it_qualifies(built: tuple[Cookbook, Path]) -> None:
    cookbook, out = built
    simulated = [(page, cell, p) for page in cookbook.pages for cell in page.cells for p in cell.points
                 if p.golden_al and pages.THROUGHPUT in p.metrics]
    assert simulated
    for page, cell, point in simulated:
        html = (out / page.slug / cell.slug / "index.html").read_text()
        value = f"{point.metrics[pages.THROUGHPUT]:,.0f}"
        summary = re.search(rf'cb-summary">Throughput {value} tok/s/GPU ([^·<]*)', html)
        assert summary and f"simulated acceptance length of {point.golden_al}" in summary.group(1) and "SIMULATE" in summary.group(1)
        assert re.search(rf"<td[^>]*>{value} &#40;simulated AL {re.escape(point.golden_al)}&#41;</td>", html), cell.slug   # in the metrics table too


def test_every_deployment_of_a_hardware_is_on_its_latency_and_interactivity_charts_or_named_as_missing(built: tuple[Cookbook, Path]) -> None:
    cookbook, _ = built
    for page in cookbook.pages:
        view, _svgs = pages.page_view(cookbook, page, dt.date(2026, 12, 7))
        for hw in view.hardware:
            measured = {c.name for c in hw.cells if any(pages.THROUGHPUT in p.metrics for p in c.cell.points)}
            kinds = [ch.file.rsplit("-", 1)[1] for ch in hw.charts]
            assert not measured or kinds == ["latency.svg", "interactivity.svg"][:len(kinds)]
            for ch in hw.charts:
                shown = {text.rsplit(" ", 1)[0] for text, _ in ch.frontier} | set(ch.missing)
                plotted = {c.name for c in hw.cells for p in c.cell.points if pages.THROUGHPUT in p.metrics} - set(ch.missing)
                assert measured == plotted | set(ch.missing) and set(ch.missing) <= measured and shown


def test_each_page_is_titled_by_its_own_model(built: tuple[Cookbook, Path]) -> None:
    cookbook, out = built
    assert len(cookbook.pages) > 1
    for page in cookbook.pages:
        others = [p.title for p in cookbook.pages if p is not page]
        for html in [out / page.slug / "index.html", *(out / page.slug / c.slug / "index.html" for c in page.cells)]:
            title = re.search(r"<title>(.*?)</title>", html.read_text()).group(1)  # type: ignore[union-attr]
            assert page.title in title and not any(o in title for o in others), title


def test_the_recipe_path_links_to_the_file_at_the_cited_commit(built: tuple[Cookbook, Path]) -> None:
    cookbook, out = built
    for page in cookbook.pages:
        for cell in page.cells:
            prov = cell.provenance
            html = (out / page.slug / cell.slug / "index.html").read_text()
            url = f"{cookbook.repo.rstrip('/')}/blob/{prov.commit}/{prov.recipe}"
            assert f'<a href="{url}"><code>' in html, cell.slug


# --- errors that point the right way ----------------------------------------------------------------

def _error(argv: list[str], cwd: Path) -> str:
    """The one stderr line of a bad input (exit 2, nothing on stdout), through the installed command."""
    run = subprocess.run([*COOKBOOKGEN, *argv], cwd=cwd, capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and run.stdout == "" and len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith("cookbookgen: error: ")
    problems = prose_problems(lines[0])
    assert not problems, problems
    return lines[0].removeprefix("cookbookgen: error: ")


def test_each_first_hour_error_is_one_line_that_names_the_thing_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    nope = tmp_path / "nope"
    assert _error(["list", "--source", str(nope)], tmp_path) == \
        f"--source {nope}: the folder does not exist; give an InferenceX checkout (a folder with configs/*-master.yaml)"
    assert _error(["list", "--source", str(tmp_path)], tmp_path).startswith(f"--source {tmp_path}: no master config in this folder")
    key = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-ag"
    line = _error(["render", "--config", key, "--point", "c1"], tmp_path)
    assert line.startswith(f"--config: unknown config key '{key}'; expected one of: ") and f"(did you mean {key}g?)" in line
    assert ":1:" not in line and "amd-master.yaml" not in line
    assert _error(["show", "nope.jsx"], tmp_path) == "nope.jsx: the file does not exist"
    vllm = "dsv41flash-fp4-mi325x-vllm-agentic-nixl"
    line = _error(["export", "--config", vllm, "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--out", "m.jsx"], tmp_path)
    assert line.startswith(f"config {vllm}: its cells run behind router 'vllm-router'") and "m.jsx" not in line
    assert not (tmp_path / "m.jsx").exists()
    line = _error(["diff", "--explain", "foo"], tmp_path)
    names = ["mismatch", "prohibited", "match", "harness-only", "default-equivalent", "placeholder", "cluster-provided", "unverified",
             "derived", "shadowed", "commit-missing", "object-missing", "no-master-entry", "recipe-missing", "framework-unsupported", "not-rendered",
             "selector-missing", "no-point-paired", "recipe-refused"]
    assert line == f"--explain: unknown finding class or unpaired reason 'foo'; expected one of: {', '.join(names)}"
    typo = tmp_path / "typo.yaml"
    typo.write_text((ROOT / "data" / "cookbook.yaml").read_text().replace("\ntitle:", "\ntitel:").replace("source: inferencex", f"source: {ROOT / 'data' / 'inferencex'}"))
    line = _error(["list", "--cookbook", str(typo)], tmp_path)       # one line, not also "title: Field required"
    assert line.startswith(f"{typo}:4: titel: unknown key 'titel'; expected one of: ") and line.endswith("(did you mean title?)")


def test_list_takes_a_built_site_as_diff_and_flags_do(built: tuple[Cookbook, Path], tmp_path: Path) -> None:
    cookbook, out = built
    run = subprocess.run([*COOKBOOKGEN, "list", "--cookbook", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    listed = {line.split()[0] for line in run.stdout.splitlines()[1:]}
    assert listed == {c.id for page in cookbook.pages for c in page.cells}


def test_diff_reads_only_what_it_is_given_and_says_what_it_compared(tmp_path: Path) -> None:
    """Another MkDocs `site/` in the folder is not added unasked (it made the README's `cookbookgen diff` exit 2)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<html>someone else's site</html>")
    run = subprocess.run([*COOKBOOKGEN, "diff"], cwd=tmp_path, capture_output=True, text=True)
    first = run.stdout.splitlines()[0]
    assert run.returncode == 0 and first.startswith("cookbookgen diff: PASS (exit 0): parity; compared ")
    assert first.endswith(f"{bundled(EXAMPLE_MANIFEST)} against {bundled(EXAMPLE_MANIFEST).parent / 'inferencex'}") and "site" not in first


def _options(parser: argparse.ArgumentParser) -> dict[str, dict[str, tuple[str | None, str | None]]]:
    """Per subcommand, per option string: (metavar, help)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {s: (a.metavar if isinstance(a.metavar, str) else None, a.help) for a in p._actions for s in a.option_strings}
            for name, p in sub.choices.items()}


def test_help_names_each_concept_one_way_and_explains_every_option() -> None:
    from cookbookgen.cli import build_parser

    options = _options(build_parser())
    shared = ["--source", "--config", "--cookbook", "--point", "--cell", "--policy", "--cache", "--date", "--logs"]
    for option in shared:
        metavars = {name: o[option][0] for name, o in options.items() if option in o}
        assert len(set(metavars.values())) == 1, f"{option} is named differently across commands: {metavars}"
    missing = [f"{name} {s}" for name, o in options.items() for s, (_, text) in o.items() if not text and s not in ("-h", "--help")]
    assert not missing, missing
    assert options["flags"]["--cookbook"][0] == "COOKBOOK"
    flags = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["flags"]
    assert not [a for a in flags._actions if not a.option_strings], "flags takes its cookbook one way: --cookbook"
