"""Build the cookbook site: generate the docs, run MkDocs (strict), swap the result into place. I/O.

- Reads the manifest (through `cells.assemble`), `templates/` and `mkdocs.yml` (repository root).
- Writes everything into a scratch folder next to `--out` (same file system), builds there, and only
  when MkDocs finished without a warning renames the old site away and the new one in. On any
  failure the old `--out` is untouched and the scratch folder is removed.
- Refuses to replace an `--out` that is neither empty nor a previous cookbook site.
- `serve_site` runs MkDocs' live-reload server on generated docs and regenerates them when the
  manifest, its checkout or the templates change.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from mkdocs.commands.build import build as mkdocs_build
from mkdocs.commands.serve import serve as mkdocs_serve
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import MkDocsException

from ..cells.assemble import load_cookbook
from ..cells.manifest import read_manifest, source_root
from ..cells.model import Cookbook
from ..cells.variants import with_variants
from ..errors import CookbookError, Problem
from .pages import page_path, site_files

SITE_MARKER = "cookbook.json"   # a folder holding it was written by `cookbookgen build`
Report = Callable[[str], None]


@dataclass(frozen=True)
class Dates:
    """The generated-on date: `date` (--date) wins, then the manifest's `generated_on`, then `fallback`
    (today, read by the command)."""

    date: dt.date | None = None
    fallback: dt.date | None = None

    def pick(self, cookbook: Cookbook, manifest: Path) -> dt.date:
        date = self.date or cookbook.generated_on or self.fallback
        if date is None:
            raise CookbookError.at(str(manifest), 0, "generated_on", "no build date: give --date or set generated_on")
        return date


@dataclass(frozen=True)
class BuildResult:
    out: Path
    pages: int
    scripts: int
    files: int
    seconds: float


def project_root() -> Path:
    """The checkout holding `mkdocs.yml` and `templates/` (cookbookgen installed from it, editable)."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "mkdocs.yml").is_file() and (parent / "templates").is_dir():
            return parent
    raise CookbookError.at("cookbookgen", 0, "build",
                           "mkdocs.yml and templates/ not found above the package; install cookbookgen from its checkout (pip install -e .)")


def read_templates(folder: Path) -> dict[str, str]:
    """Every file under `folder`, by POSIX path relative to it."""
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def write_docs(files: dict[str, str], docs: Path) -> int:
    """Write the files; unchanged ones are left alone (so a live server rebuilds only on change)."""
    changed = 0
    for rel, text in files.items():
        path = docs / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed += 1
    return changed


# MkDocs' theme templates print site_name and nav titles without escaping them everywhere.
_TITLE_SAFE = str.maketrans({"<": "‹", ">": "›", "&": "+", '"': "”", "'": "’"})


def safe_title(text: str) -> str:
    """A title for MkDocs' config (site_name, nav): no character that could open markup."""
    return text.translate(_TITLE_SAFE)


def nav(cookbook: Cookbook) -> list[dict[str, object]]:
    models = [{safe_title(page.title): page_path(page)} for page in cookbook.pages]
    return [{"Home": "index.md"}, {"Models": models}, {"Flag index": "flags.md"}]


class _Collect(logging.Handler):
    """Keeps MkDocs' warnings and errors, so they become problems instead of stray log lines."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _mkdocs_problems(where: str) -> Iterator[None]:
    logger = logging.getLogger("mkdocs")
    handler = _Collect()
    logger.addHandler(handler)
    try:
        yield
    except MkDocsException as exc:
        lines = handler.messages + [exc.format_message()]
        raise CookbookError([Problem(where, 0, "mkdocs", line) for line in lines]) from None
    finally:
        logger.removeHandler(handler)


def mkdocs_config(root: Path, docs: Path, site: Path, cookbook: Cookbook, strict: bool = True, **extra: object) -> MkDocsConfig:
    return load_config(config_file=str(root / "mkdocs.yml"), docs_dir=str(docs), site_dir=str(site),
                       site_name=safe_title(cookbook.title), nav=nav(cookbook), strict=strict, **extra)


def generate(manifest: Path, root: Path, dates: Dates) -> tuple[Cookbook, dict[str, str]]:
    """The cookbook model and the docs files for it (for `serve`; `build_site` goes step by step)."""
    cookbook = with_variants(load_cookbook(manifest))
    return cookbook, site_files(cookbook, read_templates(root / "templates"), dates.pick(cookbook, manifest))


def check_out(out: Path) -> None:
    """Only an empty folder or an earlier cookbook site may be replaced."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise CookbookError.at(str(out), 0, "--out", "exists and is not a folder; give a folder for the site")
    if out.is_dir() and any(out.iterdir()) and not (out / SITE_MARKER).is_file():
        raise CookbookError.at(str(out), 0, "--out", f"is not empty and holds no {SITE_MARKER}; refusing to replace it")


def swap_in(new: Path, out: Path, scratch: Path) -> None:
    """Rename the old site into `scratch`, the new one to `out`; put the old one back on failure."""
    old = scratch / "previous-site"
    if out.exists():
        out.rename(old)
    try:
        new.rename(out)
    except OSError:
        if old.exists():
            old.rename(out)
        raise


def build_site(manifest: Path, out: Path, dates: Dates = Dates(), show_progress: bool | None = None) -> BuildResult:
    """Load the manifest, then `publish` (see the module docstring)."""
    started = time.perf_counter()
    root = project_root()
    check_out(out)
    with _progress(sys.stderr.isatty() if show_progress is None else show_progress) as step:
        step("reading recipes")
        cookbook = load_cookbook(manifest, progress=lambda key: step(f"rendering {key}"))
        step("deriving router and KV-tier variants")
        cookbook = with_variants(cookbook)
        result = publish(cookbook, out, dates.pick(cookbook, manifest), root, step)
    return BuildResult(result.out, result.pages, result.scripts, result.files, time.perf_counter() - started)


def publish(cookbook: Cookbook, out: Path, generated_on: dt.date, root: Path | None = None,
            step: Report = lambda _text: None) -> BuildResult:
    """Generate the docs, build them with MkDocs --strict in a scratch folder, swap into `out`."""
    started = time.perf_counter()
    root = root or project_root()
    out = out.absolute()
    check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".building", dir=out.parent))
    try:
        step("generating pages")
        files = site_files(cookbook, read_templates(root / "templates"), generated_on)
        step(f"writing {len(files)} files")
        write_docs(files, scratch / "docs")
        step("building the site with MkDocs (strict)")
        with _mkdocs_problems(str(root / "mkdocs.yml")):
            mkdocs_build(mkdocs_config(root, scratch / "docs", scratch / "site", cookbook))
        step("moving the site into place")
        swap_in(scratch / "site", out, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return BuildResult(out, len(cookbook.pages), sum(f.endswith(".sh") for f in files), len(files),
                       time.perf_counter() - started)


@contextmanager
def _progress(show: bool) -> Iterator[Callable[[str], None]]:
    """A transient rich spinner on stderr naming the current step; silent when `show` is false."""
    if not show:
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("cookbookgen build", total=None)
        yield lambda text: bar.update(task, description=text)


def _inputs(manifest: Path, root: Path) -> list[Path]:
    """Files whose change should regenerate the docs: the manifest's folder, its checkout, templates."""
    manifest_doc = read_manifest(manifest)
    folders = [manifest.parent, source_root(manifest, *manifest_doc), root / "templates"]
    return [p for folder in dict.fromkeys(folders) for p in folder.rglob("*") if p.is_file()]


def _stamp(paths: list[Path]) -> tuple[tuple[str, int], ...]:
    return tuple((str(p), p.stat().st_mtime_ns) for p in paths if p.exists())


def _watch(manifest: Path, root: Path, docs: Path, dates: Dates, report: Report, stop: threading.Event) -> None:
    """Poll the inputs; regenerate the docs on change (MkDocs then rebuilds and reloads the browser)."""
    last = _stamp(_inputs(manifest, root))
    while not stop.wait(1.0):
        try:
            now = _stamp(_inputs(manifest, root))
            if now == last:
                continue
            last = now
            changed = write_docs(generate(manifest, root, dates)[1], docs)
            report(f"regenerated the docs ({changed} files changed)")
        except CookbookError as exc:
            for problem in exc.problems:
                report(f"cookbookgen: error: {problem}")


def serve_site(manifest: Path, host: str, port: int, dates: Dates = Dates(), report: Report = print) -> None:
    """Serve a live preview on http://host:port/ until interrupted."""
    root = project_root()
    cookbook, files = generate(manifest, root, dates)
    logger = logging.getLogger("mkdocs")
    logger.addHandler(_Report(report))
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="cookbookgen-serve-") as tmp:
        docs = Path(tmp) / "docs"
        write_docs(files, docs)
        stop = threading.Event()
        threading.Thread(target=_watch, args=(manifest, root, docs, dates, report, stop), daemon=True).start()
        try:
            with _mkdocs_problems(str(root / "mkdocs.yml")):
                mkdocs_serve(config_file=str(root / "mkdocs.yml"), livereload=True, docs_dir=str(docs),
                             site_name=safe_title(cookbook.title), nav=nav(cookbook), strict=False, dev_addr=f"{host}:{port}")
        finally:
            stop.set()


class _Report(logging.Handler):
    """MkDocs' own messages while serving ("Serving on ...", rebuilds), passed to `report`."""

    def __init__(self, report: Report) -> None:
        super().__init__(logging.INFO)
        self.report = report

    def emit(self, record: logging.LogRecord) -> None:
        self.report(f"mkdocs: {record.getMessage()}")
