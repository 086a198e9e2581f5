"""A content-hash cache of rendered configs and derived variants, for `cookbookgen build` (and
`diff --cache`). I/O: reads and writes its folder only.

Layout (default `.cookbookgen-cache/` beside the site folder, or `--cache DIR`):
- `render/<sha256>.pickle`: the cells of one config, keyed by every input of its rendering;
- `variants/<sha256>.pickle`: the derived variants of one cell, keyed by its config's key and donors;
- `pages/<sha256>.pickle`, `scripts/<sha256>.pickle`: the files of one model page, its launch scripts apart (see `publish.site`);
- `site/`: the state of the last successful build (`publish.site`, for incremental MkDocs builds);
- `CACHEDIR.TAG`, the cache directory tag (backup tools skip the folder) and the proof that the folder
  is a cookbookgen cache, and `.gitignore` holding `*`, so the folder never lands in a commit.

The cache deletes only what it wrote: a `--cache` folder that is neither missing, empty, nor tagged by
cookbookgen is refused before anything is written (`check_cache`), and pruning removes only entries
named as the cache names them (`<sha256>.pickle`).

The key of a config is the sha256 of, in order:
- the cache format and Python / pydantic versions (the pickles hold pydantic models);
- every file of the installed `cookbookgen` package (code, `rules/*.yaml`, `diff/*.yaml`): any change
  to cookbookgen itself starts a new cache;
- the policy (every rule and cluster env entry, in order, values with their types);
- the checkout root, the manifest's `repo`, the config's manifest entry (provenance, metrics, notes)
  and the latest perf-changelog PR naming the key;
- the master entry (its file name and YAML data, values with their types and spelling);
- for every recipe file the rows name: its path in the checkout, the srt-slurm commit a runner's checkout
  pins for it (`--recipes`: that srtctl's defaults apply, even to a file the tree copies over it) and its bytes.
Rendering reads nothing else, so equal keys mean equal cells: a hit is byte-identical to a fresh
render. Errors are never cached (a config that fails is rendered, and fails, every time). An entry
that cannot be read is a miss. Entries are written to a temporary file and renamed into place.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..errors import CookbookError
from ..files import write_atomic
from ..owned import check_folder_path
from ..policy.rules import Policy
from ..recipes.master import ConfigEntry
from ..recipes.workspace import Workspace
from .manifest import ConfigSource

if TYPE_CHECKING:  # the models (and the render stack behind them) load only when cells are rendered
    from .model import Cell, Cookbook, Variant

FORMAT = "cookbookgen-cache 1"
PRUNE_AGE_S = 7 * 24 * 3600   # entries no build used for this long are removed after a build
TAG = "CACHEDIR.TAG"
TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
            "# This file is a cache directory tag created by cookbookgen: its build cache, safe to delete.\n"
            "# For information about cache directory tags see https://bford.info/cachedir/\n")
IGNORE_TEXT = "# cookbookgen's build cache (safe to delete)\n*\n"   # also the mark of caches made before the tag
_ENTRY = re.compile(r"[0-9a-f]{64}\.pickle")


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.stat().st_size < 4096 else None
    except (OSError, UnicodeDecodeError):
        return None


def is_cache(root: Path) -> bool:
    """Whether `root` is a folder cookbookgen made as its cache."""
    return _text(root / TAG) == TAG_TEXT or _text(root / ".gitignore") == IGNORE_TEXT


def check_cache(root: Path, option: str = "--cache") -> None:
    """Refuse a cache folder that is not missing, empty or a cookbookgen cache."""
    check_folder_path(root, option)
    if root.is_dir() and any(root.iterdir()) and not is_cache(root):
        raise CookbookError.at(str(root), 0, option, f"is not empty and is not a cookbookgen cache (no {TAG} of cookbookgen); "
                                                     "refusing to use it: give a new or empty folder")


def canonical(value: Any) -> str:
    """A deterministic digest of YAML-like data that keeps types and number spelling (`0.90` and
    `0.9` differ, as they do in a command; `1`, `true` and `"1"` differ): the sha256 of its pickle
    (a `YamlFloat` holds its text). Equal data always gives equal bytes: pickling is exact, and
    the only sharing in parsed YAML (aliases, CPython's one-character strings) follows the text."""
    return hashlib.sha256(pickle.dumps(value, pickle.HIGHEST_PROTOCOL)).hexdigest()


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 of every file of the cookbookgen package (and the versions the pickles depend on)."""
    import pydantic

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"{FORMAT}|{sys.version_info[:2]}|{pydantic.VERSION}".encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


@lru_cache(maxsize=16)
def policy_fingerprint(policy: Policy) -> str:  # Policy hashes by identity
    rules = [(r.pattern, r.cls, r.reason, "any" if r.any_value else canonical([r.value]), r.replacement, r.source)
             for r in policy.rules]
    clusters = {name: [(e.name, e.value, e.reason) for e in envs] for name, envs in policy.clusters.items()}
    return hashlib.sha256(canonical([rules, clusters]).encode()).hexdigest()


class RenderCache:
    """The cache folder. `keys` maps each config rendered through it in this run to its key.

    A run that finds no cache folder writes its entries into a staging folder beside it, moved into
    place by `commit()` when the run succeeds (`discard()` otherwise): bad input leaves nothing behind.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.keys: dict[str, str] = {}
        self.cell_keys: dict[str, str] = {}     # cell id -> key of the cell with its variants
        self.used: set[Path] = set()
        self.hits = 0
        self.misses = 0
        self._direct = is_cache(root)     # else entries are staged, and only a successful run makes the folder ours
        self._stage: Path | None = None
        self.deferred: list[tuple[str, str, bytes]] | None = None   # set in worker processes (see `diff.check`)

    # --- keys ---------------------------------------------------------------------------------------

    def config_key(self, ws: Workspace, entry: ConfigEntry, source: ConfigSource, repo: str, changelog_pr: int | None,
                   policy: Policy) -> str | None:
        """The key of one config (see the module docstring); None when its recipes cannot be found
        (the render then reports that, as without a cache)."""
        h = hashlib.sha256()
        for part in (code_fingerprint(), policy_fingerprint(policy), ws.checkout.name, repo, source.model_dump_json(),
                     repr(changelog_pr), entry.doc.file, entry.key, canonical(entry.data)):
            h.update(part.encode() + b"\0")
        for ref in dict.fromkeys(row.recipe.path for row in entry.rows):
            row = next(r for r in entry.rows if r.recipe.path == ref)
            try:
                path = ws.recipe_path(entry, row)
                h.update(ws.shown(path).encode() + b"\0" + (ws.pinned_commit(entry, row) or "").encode() + b"\0")
                h.update(hashlib.sha256(ws.read_bytes(path)).digest())
            except CookbookError:
                return None
        return h.hexdigest()

    def page_key(self, page: Any) -> str | None:
        """The key of a model page's data (its cells with their variants), or None when a cell is uncached."""
        parts = [page.model, page.slug, page.title, canonical(list(page.hardware))]
        for cell in page.cells:
            key = self.cell_keys.get(cell.id)
            if key is None or self.keys.get(cell.config_key) is None:
                return None
            parts += [cell.id, key]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def cell_key(self, cell: Cell, donors: Any) -> str | None:
        config = self.keys.get(cell.config_key)
        if config is None:
            return None
        text = "\0".join((config, cell.id, canonical(donors.hicache), canonical(donors.mooncake)))
        return hashlib.sha256(text.encode()).hexdigest()

    # --- entries ------------------------------------------------------------------------------------

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / f"{key}.pickle"

    def _write_path(self, kind: str, key: str) -> Path:
        if self._direct:
            return self._path(kind, key)
        if self._stage is None:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            self._stage = Path(tempfile.mkdtemp(prefix=f".{self.root.name}.", suffix=".staging", dir=self.root.parent))
        return self._stage / kind / f"{key}.pickle"

    def commit(self) -> None:
        """Move the staged entries into the cache folder (created with its tag and `.gitignore`)."""
        stage, self._stage = self._stage, None
        if stage is None:
            return
        try:
            self.ensure()
            for path in sorted(p for p in stage.rglob("*") if p.is_file()):
                target = self.root / path.relative_to(stage)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
            self._direct = True
        except OSError:
            pass
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def discard(self) -> None:
        """Drop the staged entries (the run failed)."""
        stage, self._stage = self._stage, None
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)

    def get(self, kind: str, key: str) -> Any | None:
        path = self._path(kind, key)
        try:
            with path.open("rb") as fh:
                value = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            self.misses += 1
            return None
        self.used.add(path)
        self.hits += 1
        return value

    def cached(self, kind: str, key: str, make: Callable[[], Any]) -> Any:
        """The entry under `key`, or `make()` stored under it."""
        hit = self.get(kind, key)
        if hit is None:
            hit = make()
            self.put(kind, key, hit)
        return hit

    def put(self, kind: str, key: str, value: Any) -> None:
        if self.deferred is not None:       # a worker process: the parent writes it
            self.deferred.append((kind, key, pickle.dumps(value, pickle.HIGHEST_PROTOCOL)))
            return
        self.put_bytes(kind, key, pickle.dumps(value, pickle.HIGHEST_PROTOCOL))

    def put_bytes(self, kind: str, key: str, data: bytes) -> None:
        self.used.add(self._path(kind, key))
        try:
            write_atomic(self._write_path(kind, key), data)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def ensure(self) -> None:
        """Create the folder with its tag and `.gitignore` (`check_cache` has made sure it may)."""
        self.root.mkdir(parents=True, exist_ok=True)
        for name, text in ((TAG, TAG_TEXT), (".gitignore", IGNORE_TEXT)):
            if not (self.root / name).exists():
                (self.root / name).write_text(text, encoding="utf-8")

    def prune(self) -> None:
        """Remove entries this run did not use that are older than `PRUNE_AGE_S`; touch the ones it used.
        Every kind's folder is looked at (those of kinds an older version wrote too); only files with the
        name of an entry (`<sha256>.pickle`) are ever removed."""
        import time

        now = time.time()
        for folder in self.root.iterdir():
            if not folder.is_dir() or folder.is_symlink():
                continue
            for path in folder.iterdir():
                if not _ENTRY.fullmatch(path.name) or path.is_symlink():
                    continue
                try:
                    if path in self.used:
                        os.utime(path)
                    elif now - path.stat().st_mtime > PRUNE_AGE_S:
                        path.unlink()
                except OSError:
                    pass


@contextmanager
def cache_run(root: Path | None) -> Iterator[RenderCache | None]:
    """A run through the cache at `root` (None: no cache), refused unless it may use it (`check_cache`):
    what it wrote is committed, and entries no run used for a week are pruned, when the run succeeds;
    discarded when it fails."""
    if root is not None:
        check_cache(root)
    cache = RenderCache(root) if root is not None else None
    try:
        yield cache
    except BaseException:
        if cache is not None:
            cache.discard()
        raise
    if cache is not None:
        cache.commit()
        cache.prune()


def cells_cached(cache: RenderCache | None, key: str | None, render: Callable[[], list[Cell]]) -> list[Cell]:
    """The cells under `key`, or `render()` stored under it."""
    if cache is None or key is None:
        return render()
    return list(cache.cached("render", key, lambda: tuple(render())))


def with_variants_cached(cookbook: Cookbook, cache: RenderCache | None, whole: bool = False) -> Cookbook:
    """`cells.variants.with_variants`, reusing the variants of cells whose config key and donors are
    cached (`tests/test_cache.py` pins the equality with `with_variants`). `whole` (a whole-checkout
    build): a variant that cannot be derived is added to `Cookbook.refused` instead of stopping the build."""
    from .variants import Donors, cell_variants, with_variants

    skipped: list[Any] = []

    def derived(cell: Cell, donors: Donors) -> tuple[tuple[Variant, ...], tuple[Any, ...]]:
        mine: list[Any] = []
        return cell_variants(cell, donors, mine if whole else None), tuple(mine)

    def variants_of(cell: Cell, donors: Donors) -> tuple[Variant, ...]:
        key = cache.cell_key(cell, donors) if cache is not None else None
        if cache is None or key is None:
            variants, said = derived(cell, donors)
        else:
            cache.cell_keys[cell.id] = key
            variants, said = cache.cached("variants-checkout" if whole else "variants-pairs", key, lambda: derived(cell, donors))
        skipped.extend(said)
        return variants

    out = with_variants(cookbook, variants_of)
    return out.model_copy(update={"refused": out.refused + tuple(skipped)}) if skipped else out
