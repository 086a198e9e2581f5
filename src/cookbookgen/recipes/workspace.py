"""Reading recipes and master configs from disk, with a per-run document cache. The I/O edge of
the load/resolve stage: everything it returns is plain data for the pure stages.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import CookbookError, Problem
from ..text import unknown
from .bundle import EffectiveRecipe, apply_overrides, select, variant_names
from .changelog import Changelog, read_changelog
from .checkout import Checkout
from .launches import script_recipe
from .load import Document, read_yaml_file
from .master import ConfigEntry, Row, read_entries

if TYPE_CHECKING:  # the typed schema (pydantic) loads when a point is first resolved
    from .schema import Recipe

RawYaml = Any


@dataclass(frozen=True)
class ResolvedPoint:
    """One benchmark point: its config, row and concurrency, bound to its effective recipe."""

    entry: ConfigEntry | None
    row: Row | None
    conc: int | None
    recipe: EffectiveRecipe
    typed: Recipe
    recipe_path: str

    @property
    def point_id(self) -> str:
        return f"{self.row.slug}/c{self.conc}" if self.row else "recipe"

    @property
    def label(self) -> str:
        return f"c{self.conc}" if self.conc is not None else "recipe"


class Workspace:
    """One checkout for one run. Documents, selected variants and resolved points are cached: a
    `build` or a `diff` resolves every point once, however many stages ask for it. The master
    configs and the changelog stay for the run; recipes and points can be released (`release_points`)."""

    def __init__(self, root: Path) -> None:
        self.checkout = Checkout(root.resolve())
        self._docs: dict[Path, Document] = {}
        self._entries: dict[str, ConfigEntry] | None = None
        self._selected: dict[tuple[Path, str | None], EffectiveRecipe] = {}
        self._resolved: dict[Path, Path] = {}
        self._recipe_paths: dict[str, Path] = {}
        self._shown: dict[Path, str] = {}
        self._points: dict[tuple[str, int, int], ResolvedPoint] = {}
        self._masters: set[Path] = set()
        self._changelog: Changelog | None = None

    def _resolve(self, path: Path) -> Path:
        hit = self._resolved.get(path)
        if hit is None:
            hit = self._resolved[path] = path.resolve()
        return hit

    def document(self, path: Path) -> Document:
        key = self._resolve(path)
        if key not in self._docs:
            self._docs[key] = read_yaml_file(path, self.shown(path))
        return self._docs[key]

    def release_points(self) -> None:
        """Forget the recipes read and the points resolved so far (the master configs stay): a caller
        that is done with some configs frees their trees; a recipe asked for again is read again."""
        self._docs = {k: v for k, v in self._docs.items() if k in self._masters}
        self._selected.clear()
        self._points.clear()

    def changelog(self) -> Changelog:
        """The checkout's perf-changelog, indexed (empty when it has none); read once per run."""
        if self._changelog is None:
            path = self.checkout.changelog()
            self._changelog = Changelog() if path is None else read_changelog(self.document(path))
        return self._changelog

    def entries(self) -> Mapping[str, ConfigEntry]:
        """Every master config entry by key (read on first use)."""
        if self._entries is not None:
            return self._entries
        found: dict[str, ConfigEntry] = {}
        files = self.checkout.master_files()
        if not files:
            root = self.checkout.root
            if not root.exists():
                raise CookbookError.usage(f"--source {root}", "the folder does not exist; give an InferenceX checkout (a folder with configs/*-master.yaml)")
            raise CookbookError.usage(f"--source {root}", "no master config in this folder: expected configs/*-master.yaml "
                                                           "(or inferencex-e2e/configs/); give an InferenceX checkout")
        for path in files:
            self._masters.add(self._resolve(path))
            doc = self.document(path)
            for key, entry in read_entries(doc).items():
                if key in found:
                    raise doc.error((key,), f"config key also defined in {found[key].doc.file}")
                found[key] = entry
        self._entries = found
        return found

    def entry(self, key: str) -> ConfigEntry:
        entries = self.entries()
        if key not in entries:
            raise CookbookError.usage("--config", unknown("config key", key, entries) + f" (in the master configs of {self.checkout.root})")
        return entries[key]

    def selected(self, path: Path, selector: str | None) -> EffectiveRecipe:
        key = (self._resolve(path), selector)
        if key not in self._selected:
            self._selected[key] = select(self.document(path), selector)
        return self._selected[key]

    def recipe_path(self, entry: ConfigEntry, row: Row) -> Path:
        """The recipe file a row names (checked by `Checkout.recipe_path`; paths found are cached)."""
        ref = row.recipe.path
        hit = self._recipe_paths.get(ref)
        if hit is None:
            hit = self._recipe_paths[ref] = self.checkout.recipe_path(ref, entry.doc.problem(row.recipe.where, ""),
                                                                      self.checkout.layout_dir(entry.doc.file))
            self._resolved[hit] = hit              # `Checkout.recipe_path` resolved it
        return hit

    def shown(self, path: Path) -> str:
        """How reports name `path` (relative to the checkout), worked out once per path."""
        hit = self._shown.get(path)
        if hit is None:
            hit = self._shown[path] = self.checkout.shown(path)
        return hit

    def point(self, entry: ConfigEntry, row: Row, conc: int, sets: Sequence[str] = (), unsets: Sequence[str] = ()) -> ResolvedPoint:
        # A point of this workspace's own entries, without --set/--unset, is resolved once per run.
        memo = not sets and not unsets and self._entries is not None and self._entries.get(entry.key) is entry
        key = (entry.key, row.index, conc)
        if memo and key in self._points:
            return self._points[key]
        path = self.recipe_path(entry, row)
        from .schema import normalise

        if path.suffix == ".sh":            # a single-node benchmark script: run in a sandbox
            recipe = script_recipe(path, self.shown(path), entry, row, conc)
        else:
            recipe = self.selected(path, self.selector(entry, row, conc))
        point = ResolvedPoint(entry, row, conc, *normalise(apply_overrides(recipe, sets, unsets)), self.shown(path))
        if memo:
            self._points[key] = point
        return point

    def selector(self, entry: ConfigEntry, row: Row, conc: int) -> str | None:
        """The variant of the row's recipe file that the point uses: the one the master config names,
        else the only override whose TP and concurrency match (None: a plain recipe or a benchmark script)."""
        if row.recipe.selector:
            return row.recipe.selector
        path = self.recipe_path(entry, row)
        return None if path.suffix == ".sh" else self._auto_selector(path, row, conc, entry.doc.problem(row.recipe.where, ""))

    def _auto_selector(self, path: Path, row: Row, conc: int, where: Problem) -> str | None:
        doc = self.document(path)
        names = [n for n in variant_names(doc) if n.startswith("override_")]
        if not names:
            return None
        hits = [n for n in names if _matches(self.selected(path, n).data, row.tp, conc)]
        if len(hits) == 1:
            return hits[0]
        why = "no override" if not hits else f"{len(hits)} overrides ({', '.join(hits)})"
        raise CookbookError([replace(where, message=f"{why} of {doc.file} match tp={row.tp} and benchmark.env.CONC={conc}; "
                                                    "name one with :override_<name>")])

    def bare_recipe(self, ref: str, sets: Sequence[str] = (), unsets: Sequence[str] = ()) -> ResolvedPoint:
        """A recipe named on the command line as FILE[:SELECTOR], outside any master config."""
        from .schema import normalise

        file, _, selector = ref.partition(":")
        recipe = apply_overrides(select(read_yaml_file(Path(file), file), selector or None), sets, unsets)
        return ResolvedPoint(None, None, None, *normalise(recipe), file)


def _matches(data: dict[str, RawYaml], tp: int | None, conc: int) -> bool:
    """Whether a variant (not validated yet: any shape) has this TP and concurrency."""
    roles = _mapping(data.get("roles"))
    args = _mapping(_mapping(roles.get("agg") or roles.get("prefill")).get("args"))
    got_tp = next((args[k] for k in ("tensor-parallel-size", "tp-size") if k in args), None)
    got_conc = _mapping(_mapping(data.get("benchmark")).get("env")).get("CONC")
    return (tp is None or str(got_tp) == str(tp)) and str(got_conc) == str(conc)


def _mapping(value: RawYaml) -> dict[str, RawYaml]:
    return value if isinstance(value, dict) else {}


def model_id(point: ResolvedPoint) -> str:
    """The Hugging Face id: master `model`, else an `hf:` model path, else identity.model.repo."""
    if point.entry and point.entry.model:
        return str(point.entry.model)
    path = point.typed.model.path or ""
    if path.startswith("hf:"):
        return path[3:]
    repo = point.typed.identity.model.repo
    if repo:
        return repo
    raise point.recipe.error(("model", "path"), f"cannot tell the model's Hugging Face id from {path!r}: use an hf: path, identity.model.repo, or a master config")
