"""Build the cookbook site: generate the docs, run MkDocs (strict), swap the result into place. I/O.

- Reads the manifest (through `cells.assemble`), `templates/` and `mkdocs.yml` (repository root).
- Writes everything into a scratch folder next to `--out` (same file system), builds there, and only
  when MkDocs finished without a warning renames the old site away and the new one in. On any
  failure the old `--out` is untouched and the scratch folder is removed. Launch scripts are not
  Markdown: they are written beside the docs and moved into the built site (MkDocs would only copy them).
- Writes, replaces or deletes only what it wrote itself (`owned`): `--out` must be missing, empty or a
  site it built (its `.cookbookgen-site` lists every file there), `--keep-docs` the same for its
  `docs/` and `mkdocs.yml` (`.cookbookgen-docs`), `--cache` missing, empty or a cookbookgen cache; all
  three are checked, and kept apart, before anything is written.
- SIGINT, SIGTERM and SIGHUP stop a build as a failure does (`stop_on_signals`): the old site stays,
  nothing is left behind; one that comes while the new site is swapped in waits for the swap.
- `serve_site` runs MkDocs' live-reload server on generated docs and regenerates them when the
  manifest, its checkout or the templates change.

Incremental builds (`cache`, the folder of `cells.cache`; `cookbookgen build` passes
`.cookbookgen-cache/` beside `--out` unless `--no-cache`):
- the state of the last successful build is kept in `<cache>/site/state.json`: the sha256 of every
  docs file, where MkDocs wrote it, the build context (mkdocs.yml, nav, site name, the versions of
  MkDocs, Material, Markdown and pymdown-extensions, cookbookgen's own code), each page's
  anchors and its links into other pages, and a fingerprint (path, size, mtime, inode) of `--out`;
- a build whose context, docs file set and `--out` all match that state is incremental: the output
  of every unchanged docs file is hard-linked from `--out` into the scratch site, the unchanged
  sources get an old mtime, and MkDocs 1.6 `build(dirty=True)` renders only the changed pages (the
  unchanged pages' anchors are handed to MkDocs so links into them are still validated);
- Material's search index then holds only the rebuilt pages, so the previous entries of the other
  pages are merged back in the order a full build writes them (`search_index.json` and the offline
  plugin's `search_index.js` come out byte-identical to a full build's);
- links from unchanged pages into rebuilt ones are checked against the new anchors; any mismatch, and
  any doubt (a missing output, a linked file that changed), falls back to a full build.
MkDocs never writes to a linked file (it skips them as unmodified), so the old site stays intact
until the swap; the scratch site owns new copies of everything it rewrites.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Mapping

from mkdocs.commands.build import build as mkdocs_build
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import MkDocsException
from mkdocs.plugins import BasePlugin

from ..cells.assemble import load_cookbook
from ..cells.cache import RenderCache, cache_run, check_cache, code_fingerprint, with_variants_cached
from ..cells.manifest import read_manifest, source_root
from ..cells.model import Cookbook
from ..cells.variants import with_variants
from ..recipes.workspace import Workspace
from ..errors import CookbookError, Problem
from ..files import write_atomic
from ..project import project_root
from ..owned import check_apart, check_replaceable, files_under, write_marker
from .pages import PageFiles, environment, page_files, page_path, safe_title, site_files

SITE_MARKER = ".cookbookgen-site"   # in --out: the files of the site `cookbookgen build` wrote there
DOCS_MARKER = ".cookbookgen-docs"   # in --keep-docs: the same for the docs and mkdocs.yml it kept there
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
    rebuilt: int | None = None   # docs files MkDocs processed in an incremental build; None: a full build
    refused: tuple[str, ...] = ()   # a whole-checkout build: configs and points not published, each with its reason


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


def nav(cookbook: Cookbook) -> list[dict[str, object]]:
    models = [{safe_title(page.title): page_path(page)} for page in cookbook.pages]
    return [{"Home": "index.md"}, {"Models": models}, {"Flag index": "flags.md"}]


class _Pass(logging.Handler):
    """Hands the message of every record at `level` or above to `to`."""

    def __init__(self, level: int, to: Report) -> None:
        super().__init__(level)
        self.to = to

    def emit(self, record: logging.LogRecord) -> None:
        self.to(record.getMessage())


@contextmanager
def _mkdocs_problems(where: str) -> Iterator[None]:
    """MkDocs' warnings and errors become problems instead of stray log lines."""
    logger = logging.getLogger("mkdocs")
    messages: list[str] = []
    handler = _Pass(logging.WARNING, messages.append)
    logger.addHandler(handler)
    try:
        yield
    except MkDocsException as exc:
        lines = messages + [exc.format_message()]
        raise CookbookError([Problem(where, 0, "mkdocs", line) for line in lines]) from None
    finally:
        logger.removeHandler(handler)


def _config(root: Path, scratch: Path, site_name: str, pages_nav: list[dict[str, object]]) -> MkDocsConfig:
    """MkDocs' strict config for building `scratch/docs` into `scratch/site`."""
    return load_config(config_file=str(root / "mkdocs.yml"), docs_dir=str(scratch / "docs"), site_dir=str(scratch / "site"),
                       site_name=site_name, nav=pages_nav, strict=True)


def generate(manifest: Path, root: Path, dates: Dates) -> tuple[Cookbook, dict[str, str]]:
    """The cookbook model and the docs files for it (for `serve`; `build_site` goes step by step)."""
    cookbook = with_variants(load_cookbook(manifest))
    return cookbook, site_files(cookbook, read_templates(root / "templates"), dates.pick(cookbook, manifest))


def check_paths(out: Path, cache: Path | None = None, keep_docs: Path | None = None) -> None:
    """Refuse, before anything is written, folders the build may not write (module docstring)."""
    given = {"--out": out, "--keep-docs": keep_docs, "--cache": cache}
    check_apart({option: folder for option, folder in given.items() if folder is not None})
    check_replaceable(out, SITE_MARKER, "--out")
    if keep_docs is not None:
        check_replaceable(keep_docs, DOCS_MARKER, "--keep-docs", parts=("docs", "mkdocs.yml"))
    if cache is not None:
        check_cache(cache)


def swap_in(new: Path, out: Path, scratch: Path) -> None:
    """Rename the old site into `scratch`, the new one to `out`; put the old one back on failure."""
    old = scratch / "previous-site"
    with _signals_wait():
        if out.exists():
            out.rename(old)
        try:
            new.rename(out)
        except OSError:
            if old.exists():
                old.rename(out)
            raise


def build_site(manifest: Path, out: Path, dates: Dates = Dates(), show_progress: bool | None = None,
               cache: Path | None = None, keep_docs: Path | None = None, recipes: Path | None = None) -> BuildResult:
    """Load the manifest, then `publish` (see the module docstring). With `cache`, configs whose inputs
    are unchanged are not rendered again (`cells.cache`) and MkDocs rebuilds only changed pages; `recipes`:
    the srt-slurm repository a whole-checkout build reads its runners' recipes from (`Workspace`)."""
    started = time.perf_counter()
    root = project_root()
    check_paths(out, cache, keep_docs)
    with cache_run(cache) as renders, _progress(sys.stderr.isatty() if show_progress is None else show_progress) as step:
        step("reading recipes")
        workspaces = {manifest.resolve(): Workspace(manifest.resolve(), recipes)} if recipes is not None else None
        cookbook = load_cookbook(manifest, progress=lambda key: step(f"rendering {key}"), cache=renders, workspaces=workspaces)
        step("deriving router and KV-tier variants")
        box = [with_variants_cached(cookbook, renders, whole=manifest.is_dir())]
        refused = tuple(map(str, box[0].refused))
        del cookbook                       # `publish` holds the only reference, and drops it before MkDocs runs
        generated_on = dates.pick(box[0], manifest)
        result = publish(box.pop(), out, generated_on, root, step, cache=cache, keep_docs=keep_docs, pages=renders)
    return replace(result, seconds=time.perf_counter() - started, refused=refused)


def publish(cookbook: Cookbook, out: Path, generated_on: dt.date, root: Path | None = None,
            step: Report = lambda _text: None, cache: Path | None = None, keep_docs: Path | None = None,
            pages: RenderCache | None = None) -> BuildResult:
    """Generate the docs, build them with MkDocs --strict in a scratch folder, swap into `out`.

    `cache`: keep the build state there and build incrementally when it matches (module docstring).
    `keep_docs`: also leave the generated docs in that folder (replaced), with a `mkdocs.yml` that
    builds them with plain MkDocs (`mkdocs build -f <keep_docs>/mkdocs.yml`), as the benchmark does.
    `pages`: the cache the cookbook was rendered through; model pages whose data it knows unchanged
    are not generated again (`generate_docs`).
    """
    started = time.perf_counter()
    root = root or project_root()
    out = out.absolute()
    check_paths(out, cache, keep_docs)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch: Path | None = None
    rebuilt: int | None = None
    try:
        with _signals_wait():    # a signal while the folder is made waits until `finally` knows to remove it
            scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".building", dir=out.parent))
        state_dir = cache / "site" if cache is not None else None
        previous = SiteState.load(state_dir, out) if state_dir is not None else None
        step("generating pages")
        made = generate_docs(cookbook, read_templates(root / "templates"), generated_on, pages,
                             previous.pages if previous is not None else {})
        files, kept, page_scripts = made.files, made.kept, made.scripts
        del made                               # so that `del files` below frees the docs
        step(f"writing {len(files) + len(kept)} files")
        scripts = {rel: files.pop(rel) for rel in [rel for rel in files if _is_script(rel)]}
        counts = (len(cookbook.pages), len(scripts) + len(kept), len(scripts) + len(files) + len(kept))
        (scratch / "scripts").mkdir()
        write_docs(scripts, scratch / "scripts")
        for rel in kept:
            (scratch / "scripts" / rel).parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(str(out / rel), str(scratch / "scripts" / rel))
        write_docs(files, scratch / "docs")
        hashes = {rel: hashlib.sha256(text.encode("utf-8")).hexdigest() for rel, text in files.items()}
        title, pages_nav = safe_title(cookbook.title), nav(cookbook)
        context = build_context(root, cookbook)
        del files, scripts, cookbook           # the docs are on disk: free the memory before MkDocs needs its own
        unchanged = previous.unchanged(context, hashes) if previous is not None else None
        with _mkdocs_problems(str(root / "mkdocs.yml")):
            recorder = None
            if unchanged:
                step(f"building {len(hashes) - len(unchanged)} changed files with MkDocs (strict, incremental)")
                assert previous is not None
                config = _config(root, scratch, title, pages_nav)
                recorder = _incremental(config, previous, unchanged, out, scratch)
                rebuilt = len(hashes) - len(unchanged) if recorder is not None else None
            if recorder is None:
                step("building the site with MkDocs (strict)")
                config = _config(root, scratch, title, pages_nav)
                recorder = _Recorder()
                config.plugins["cookbookgen-recorder"] = recorder
                mkdocs_build(config)
        if keep_docs is not None:
            _keep_docs(scratch / "docs", scratch / "scripts", keep_docs, root, title, pages_nav)
        shutil.copytree(scratch / "scripts", scratch / "site", copy_function=os.replace, dirs_exist_ok=True)   # renames: one file system
        write_marker(scratch / "site", SITE_MARKER, files_under(scratch / "site"))
        step("moving the site into place")
        swap_in(scratch / "site", out, scratch)
        if state_dir is not None:
            with _signals_wait():
                state = SiteState.after(context, hashes, page_scripts, recorder, previous if rebuilt is not None else None, out)
                with suppress(OSError):    # a cache that cannot be written only costs time (an older state never matches the new site)
                    RenderCache(state_dir.parent).ensure()
                    state.save(state_dir)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return BuildResult(out, *counts, time.perf_counter() - started, rebuilt)


def _is_script(rel: str) -> bool:
    return rel.endswith(".sh")


@dataclass(frozen=True)
class Generated:
    files: dict[str, str]            # the docs files and launch scripts to write
    kept: list[str]                  # launch scripts of unchanged pages, taken from the site in `--out`
    scripts: dict[str, list[str]]    # page key -> its launch scripts (the next build's `kept`)


def generate_docs(cookbook: Cookbook, templates: dict[str, str], generated_on: dt.date, cache: RenderCache | None,
                  in_site: Mapping[str, list[str]]) -> Generated:
    """`pages.site_files`, reusing the files of model pages whose data is unchanged.

    A model page's files (`pages.page_files`) are a function of its own cells (with variants), the
    cookbook's title and repo, the date, the templates and cookbookgen's code, nothing else; its key
    (`RenderCache.page_key`) covers all of them. The cache keeps a page's launch scripts apart from
    its other files: those of a page whose key is in `in_site` (it is built into the unchanged site
    in `--out`) are not read, but taken from that site. `tests/test_incremental.py` pins the result
    to the plain `site_files`.
    """
    if cache is None:
        return Generated(site_files(cookbook, templates, generated_on), [], {})
    env = environment(templates)
    common = "\0".join([code_fingerprint(), json.dumps(templates, sort_keys=True), cookbook.title, cookbook.repo,
                        generated_on.isoformat()])
    done: dict[str, PageFiles] = {}
    kept: list[str] = []
    scripts: dict[str, list[str]] = {}
    for page in cookbook.pages:
        data = cache.page_key(page)
        key = hashlib.sha256(f"{common}\0{data}".encode()).hexdigest() if data else ""
        made = cache.get("pages", key) if key else None
        if isinstance(made, PageFiles) and key in in_site:
            kept += in_site[key]                       # its launch scripts are in the site already
            scripts[key] = in_site[key]
        else:
            texts = cache.get("scripts", key) if isinstance(made, PageFiles) else None
            if isinstance(made, PageFiles) and isinstance(texts, dict):
                made = replace(made, files={**made.files, **texts})
            else:
                made = page_files(cookbook, page, env, generated_on)
                if key:
                    cache.put("pages", key, replace(made, files={r: t for r, t in made.files.items() if not _is_script(r)}))
                    cache.put("scripts", key, {r: t for r, t in made.files.items() if _is_script(r)})
            if key:
                scripts[key] = [r for r in made.files if _is_script(r)]
        done[page.slug] = made
    return Generated(site_files(cookbook, templates, generated_on, done), kept, scripts)


def _keep_docs(docs: Path, scripts: Path, keep: Path, root: Path, title: str, pages_nav: list[dict[str, object]]) -> None:
    """Copy the docs and the launch scripts to `keep/docs` with a `keep/mkdocs.yml` that builds them as
    `cookbookgen build` does (`check_paths` has made sure that what they replace was written by an
    earlier build). The docs are hard-linked where the file system allows (the scratch copies go);
    the scripts are copied, as they also go into the site."""
    import yaml

    keep = keep.absolute()
    if (keep / "docs").exists():
        shutil.rmtree(keep / "docs")
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copytree(docs, keep / "docs", copy_function=_link_or_copy)
    shutil.copytree(scripts, keep / "docs", dirs_exist_ok=True)
    config = {"INHERIT": str(root / "mkdocs.yml"), "docs_dir": "docs", "site_dir": "site", "site_name": title, "nav": pages_nav}
    (keep / "mkdocs.yml").write_text("# Written by cookbookgen build --keep-docs: the same build, with plain MkDocs.\n"
                                     + yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    write_marker(keep, DOCS_MARKER, ["mkdocs.yml", *(f"docs/{rel}" for rel in files_under(keep / "docs"))])


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:                        # no hard links here: a copy with the same mtime does as well
        shutil.copy2(src, dst)


# --- incremental builds ---------------------------------------------------------------------------

STATE_FORMAT = 1
_OLD_NS = 1_000_000_000   # mtime given to unchanged docs: older than any output, so MkDocs skips them


def build_context(root: Path, cookbook: Cookbook) -> str:
    """Everything besides the docs that shapes every page: a change means a full build."""
    from importlib.metadata import version

    parts = [str(STATE_FORMAT), code_fingerprint(), (root / "mkdocs.yml").read_text(encoding="utf-8"),
             json.dumps(nav(cookbook)), safe_title(cookbook.title)]
    parts += [f"{dist}={version(dist)}" for dist in ("mkdocs", "mkdocs-material", "Markdown", "pymdown-extensions")]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def site_fingerprint(out: Path) -> dict[str, list[int]]:
    """(size, mtime, inode) of every file of the site: the state applies only to the site it built."""
    stats = {rel: (out / rel).stat() for rel in files_under(out)}
    return {rel: [st.st_size, st.st_mtime_ns, st.st_ino] for rel, st in stats.items()}


class _Recorder(BasePlugin):  # type: ignore[type-arg, no-untyped-call]
    """Records what an incremental build needs about each page; hands stored anchors to MkDocs."""

    def __init__(self, anchors: dict[str, list[str]] | None = None) -> None:
        super().__init__()
        self.known = anchors or {}
        self.order: list[str] = []
        self.urls: dict[str, str] = {}
        self.dest: dict[str, str] = {}
        self.anchors: dict[str, list[str]] = {}
        self.links: dict[str, dict[str, dict[str, str]]] = {}

    def on_page_content(self, html: str, /, *, page, config, files):  # type: ignore[no-untyped-def]
        self.anchors[page.file.src_uri] = sorted(page.present_anchor_ids or ())
        links = {to.src_uri: dict(sorted(found.items())) for to, found in (page.links_to_anchors or {}).items()
                 if to.src_uri != page.file.src_uri}
        self.links[page.file.src_uri] = dict(sorted(links.items()))
        return html

    def on_env(self, env, /, *, config, files):  # type: ignore[no-untyped-def]
        docs = os.path.abspath(config.docs_dir)
        for file in files:
            if file.src_dir is not None and os.path.abspath(file.src_dir) == docs:
                self.dest[file.src_uri] = file.dest_uri
        for file in files.documentation_pages():
            self.order.append(file.src_uri)
            self.urls[file.src_uri] = file.url
            page = file.page
            if page is not None and page.present_anchor_ids is None and file.src_uri in self.known:
                page.present_anchor_ids = set(self.known[file.src_uri])  # not rendered: its anchors as last built
        return env


def _not_dirty_warning(record: logging.LogRecord) -> bool:
    """MkDocs warns about every dirty build (its navigation may be stale); ours is complete, see above."""
    return not str(record.msg).startswith("A 'dirty' build is being performed")


def _incremental(config: MkDocsConfig, previous: "SiteState", unchanged: set[str], out: Path, scratch: Path) -> _Recorder | None:
    """A dirty MkDocs build on links to the unchanged outputs; None when a full build is needed."""
    site, docs = scratch / "site", scratch / "docs"
    linked: dict[Path, int] = {}
    for rel in sorted(unchanged):
        dest = previous.dest.get(rel)
        if dest is None or not (out / dest).is_file():
            return None
        target = site / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(str(out / dest), str(target))
        linked[target] = target.stat().st_mtime_ns
        os.utime(docs / rel, ns=(_OLD_NS, _OLD_NS))
    recorder = _Recorder(previous.anchors)
    config.plugins["cookbookgen-recorder"] = recorder
    logging.getLogger("mkdocs.commands.build").addFilter(_not_dirty_warning)
    try:
        mkdocs_build(config, dirty=True)
    finally:
        logging.getLogger("mkdocs.commands.build").removeFilter(_not_dirty_warning)
    if any(path.stat().st_mtime_ns != mtime for path, mtime in linked.items()):
        raise CookbookError.at(str(out), 0, "build", "MkDocs rewrote an unchanged file of the previous site; "
                                                     "delete the cache folder and build again")
    rebuilt = set(recorder.anchors)
    if set(recorder.order) != set(previous.order) or not _links_hold(previous, recorder, rebuilt):
        shutil.rmtree(site)
        return None
    _merge_search_index(site, out, previous, recorder, rebuilt)
    return recorder


def _links_hold(previous: "SiteState", recorder: _Recorder, rebuilt: set[str]) -> bool:
    """Whether the links of unchanged pages still find their anchors in the rebuilt pages."""
    for src, targets in previous.links.items():
        if src in rebuilt:
            continue
        for target, anchors in targets.items():
            if target in rebuilt and not set(anchors) <= set(recorder.anchors[target]):
                return False
    return True


def _merge_search_index(site: Path, out: Path, previous: "SiteState", recorder: _Recorder, rebuilt: set[str]) -> None:
    """Material's index of a dirty build holds the rebuilt pages only: add back the others' entries,
    in the order a full build writes them (page by page, in MkDocs' build order)."""
    path = site / "search" / "search_index.json"
    old_path = out / "search" / "search_index.json"
    if not path.is_file() or not old_path.is_file():
        return
    new = json.loads(path.read_text(encoding="utf-8"))
    old = json.loads(old_path.read_text(encoding="utf-8"))
    entries: dict[tuple[bool, str], list[dict[str, object]]] = {}     # (in the new index, page url) -> its entries
    for in_new, index in ((False, old), (True, new)):
        for entry in index["docs"]:
            entries.setdefault((in_new, str(entry["location"]).split("#", 1)[0]), []).append(entry)
    docs = [entry for src in recorder.order for entry in entries.get((src in rebuilt, recorder.urls[src]), [])]
    data = json.dumps({**new, "docs": docs}, separators=(",", ":"), default=str)   # as Material writes it
    path.write_bytes(data.encode("utf-8"))
    script = site / "search" / "search_index.js"
    if script.is_file():                                                            # as the offline plugin writes it
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(f"var __index = {data}")


@dataclass
class SiteState:
    """What the last successful build left for the next one (see the module docstring)."""

    context: str
    docs: dict[str, str]
    dest: dict[str, str]
    order: list[str]
    urls: dict[str, str]
    anchors: dict[str, list[str]]
    links: dict[str, dict[str, dict[str, str]]]
    site: dict[str, list[int]]
    pages: dict[str, list[str]]     # page key (`generate_docs`) -> its launch scripts

    @classmethod
    def load(cls, folder: Path, out: Path) -> "SiteState | None":
        """The state kept in `folder`, when it describes the site in `out` (None: none, or another site)."""
        try:
            data = json.loads((folder / "state.json").read_text(encoding="utf-8"))
            state = cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return state if out.is_dir() and site_fingerprint(out) == state.site else None

    def save(self, folder: Path) -> None:
        write_atomic(folder / "state.json", json.dumps(self.__dict__, separators=(",", ":")))

    def unchanged(self, context: str, docs: dict[str, str]) -> set[str] | None:
        """The docs files whose output can be kept (from the site in `out` when it was loaded), or None when
        only a full build will do."""
        if context != self.context or set(docs) != set(self.docs):
            return None
        return {rel for rel, digest in docs.items() if self.docs[rel] == digest} or None

    @classmethod
    def after(cls, context: str, docs: dict[str, str], pages: dict[str, list[str]], recorder: _Recorder, previous: "SiteState | None",
              out: Path) -> "SiteState":
        """The state of the site just swapped into `out` (`previous` fills in the unchanged pages)."""
        anchors = {**(previous.anchors if previous else {}), **recorder.anchors}
        links = {**(previous.links if previous else {}), **recorder.links}
        return cls(context, docs, recorder.dest, recorder.order, recorder.urls, anchors, links, site_fingerprint(out), pages)


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
    """Files whose change should regenerate the docs: the manifest's folder, its checkout, templates
    (without the checkout while the manifest cannot be read: its next edit is seen all the same)."""
    folders = [manifest.parent, root / "templates"]
    with suppress(CookbookError):
        folders.insert(1, source_root(manifest, *read_manifest(manifest)))
    return [p for folder in dict.fromkeys(folders) for p in folder.rglob("*") if p.is_file()]


def _stamp(paths: list[Path]) -> tuple[tuple[str, int], ...]:
    found = []
    for path in paths:
        with suppress(OSError):           # removed since it was listed
            found.append((str(path), path.stat().st_mtime_ns))
    return tuple(found)


def _watch(manifest: Path, root: Path, docs: Path, dates: Dates, report: Report, stop: threading.Event) -> None:
    """Poll the inputs; regenerate the docs on change (MkDocs then rebuilds and reloads the browser).
    A problem is reported once, when the change that caused it is seen."""
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
        except OSError as exc:
            report(f"cookbookgen: error: {exc.filename}: {exc.strerror}")


def check_address(host: str, port: int) -> None:
    """Refuse, before building anything, an address the preview cannot listen on (in use, not ours)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)      # as the server binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise _cannot_listen(host, port, exc) from None


def _cannot_listen(host: str, port: int, exc: OSError) -> CookbookError:
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return CookbookError.usage("serve", f"cannot listen on {address}: {exc.strerror or exc}")


def serve_site(manifest: Path, host: str, port: int, dates: Dates = Dates(), report: Report = print) -> None:
    """Serve a live preview on http://host:port/ until interrupted (`stop_on_signals`: MkDocs stops its
    server on the first signal, and everything temporary is removed)."""
    from mkdocs.commands.serve import serve as mkdocs_serve

    root = project_root()
    check_address(host, port)
    cookbook, files = generate(manifest, root, dates)
    logger = logging.getLogger("mkdocs")
    logger.addHandler(_Pass(logging.INFO, lambda message: report(f"mkdocs: {message}")))   # "Serving on ...", rebuilds
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="cookbookgen-serve-") as tmp:
        docs = Path(tmp) / "docs"
        write_docs(files, docs)
        stop = threading.Event()
        threading.Thread(target=_watch, args=(manifest, root, docs, dates, report, stop), daemon=True).start()
        try:
            with _mkdocs_problems(str(root / "mkdocs.yml")), _temporary_files_in(Path(tmp)):
                mkdocs_serve(config_file=str(root / "mkdocs.yml"), livereload=True, docs_dir=str(docs),
                             site_name=safe_title(cookbook.title), nav=nav(cookbook), strict=False, dev_addr=f"{host}:{port}")
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES):
                raise
            raise _cannot_listen(host, port, exc) from None          # taken since `check_address`
        finally:
            stop.set()


@contextmanager
def _temporary_files_in(folder: Path) -> Iterator[None]:
    """MkDocs' `serve` makes its site folder with `tempfile` before it guards its removal: made inside
    `folder`, the folder goes with it, whenever a signal stops the preview."""
    previous, tempfile.tempdir = tempfile.tempdir, str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = previous


# --- signals --------------------------------------------------------------------------------------

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A signal stopped the command; its exit status is 128 + `signum` (130 for Ctrl-C, 143 for `kill`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Held:
    """A signal that came while the new site was being swapped in (`_signals_wait`)."""

    waiting = False
    signum: int | None = None


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT (Ctrl-C), SIGTERM (`kill`, service managers) and SIGHUP (the terminal closed) raise
    `Interrupted`, so every clean-up runs: the scratch folder removed, staged cache entries discarded,
    MkDocs' preview server stopped. Later signals are ignored until the command ends, so the clean-up
    completes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        for each in STOP_SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        if _Held.waiting:
            _Held.signum = signum
            return
        raise Interrupted(signum)

    previous = {each: signal.signal(each, stop) for each in STOP_SIGNALS}
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


@contextmanager
def _signals_wait() -> Iterator[None]:
    """A stopping signal waits for the end of this block (the old site is never left half moved)."""
    _Held.waiting = True
    try:
        yield
    finally:
        _Held.waiting = False
        signum, _Held.signum = _Held.signum, None
        if signum is not None:
            raise Interrupted(signum)
