"""Reading recipes and master configs from a checkout (a folder, or a git commit: `recipes.view`),
with a per-run document cache. The I/O edge of the load/resolve stage: everything it returns is plain
data for the pure stages. Files are named by their paths relative to the checkout's top.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

from ..errors import CookbookError, Problem
from ..text import unknown
from . import amd_atom_disagg, amd_disagg
from .bundle import EffectiveRecipe, apply_overrides, select, variant_names
from .changelog import Changelog, read_changelog
from .checkout import Checkout
from .launches import ScriptRuns, script_recipe, script_variables
from .load import MAX_BYTES, Document, Shadowed, parse_yaml_bytes, read_yaml_file
from .master import ConfigEntry, Row, read_entries
from .script import ScriptFiles
from .view import FileView, FolderView, script_files

if TYPE_CHECKING:  # the typed schema (pydantic) loads when a point is first resolved
    from .schema import Recipe, Typed
    from .srtslurm import Pin, SrtSlurm

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
    configs and the changelog stay for the run; recipes and points can be released (`release_points`).
    `source`: a folder (read as a working tree), or any file view (a git commit). `recipes`: an
    srt-slurm repository (`--recipes`): rows naming `CONFIG_FILE=recipes/...` are read from the
    checkout their runner makes of it (`srtslurm`), under their `srt-slurm@<commit>/` names."""

    def __init__(self, source: Path | FileView, recipes: Path | None = None) -> None:
        self.checkout = Checkout(FolderView(source) if isinstance(source, Path) else source)
        self.srt: SrtSlurm | None = None
        if recipes is not None:
            from .gitrepo import CommitView
            from .srtslurm import SrtSlurm, ix_time

            self.srt = SrtSlurm(recipes)
            self._ix_time = ix_time(source if isinstance(source, Path) else None) if not isinstance(source, CommitView) \
                else source.repo.committed(source.sha)      # a cited commit of a git source: its own committer time
        self._pins: dict[tuple[str, int], Pin] = {}                   # by config key and row index
        self._runner_paths: dict[tuple[str, int], PurePosixPath] = {}
        self._docs: dict[PurePosixPath, Document] = {}
        self._entries: dict[str, ConfigEntry] | None = None
        self._selected: dict[tuple[PurePosixPath, str | None], EffectiveRecipe] = {}
        self._recipe_paths: dict[str, PurePosixPath] = {}
        self._scripts: dict[PurePosixPath, ScriptFiles] = {}
        self._runs = ScriptRuns()             # each distinct script + variables runs once per run
        self._prefetched: set[str] = set()    # the entries whose scripts `prefetch` started
        self._points: dict[tuple[str, int, int], ResolvedPoint] = {}
        self._masters: set[PurePosixPath] = set()
        self._changelog: Changelog | None = None
        self._bare: list[Document] = []       # recipes named on the command line (`bare_recipe`)

    def document(self, path: PurePosixPath) -> Document:
        if path not in self._docs:
            self._docs[path] = parse_yaml_bytes(self.read_bytes(path), self.shown(path), last_key_wins=True)
        return self._docs[path]

    def read_bytes(self, path: PurePosixPath) -> bytes:
        """The bytes of a file of the checkout, or of the srt-slurm repository under its `srt-slurm@` name (at most `load.MAX_BYTES`)."""
        mounted = self.srt.view(path.parts[0]) if self.srt is not None and path.parts else None
        if mounted is not None:
            return mounted.read(PurePosixPath(*path.parts[1:]), self.shown(path), MAX_BYTES)
        return self.checkout.view.read(path, self.shown(path), MAX_BYTES)

    def script_files(self, path: PurePosixPath) -> ScriptFiles:
        """What the sandbox is given to run the benchmark script `path` (`view.script_files`), once per script."""
        hit = self._scripts.get(path)
        if hit is None:
            hit = self._scripts[path] = script_files(self.checkout.view, path, self.shown(path))
        return hit

    def findings(self) -> list[str]:
        """What the recipes read so far say twice (duplicate keys, the last value taken), one line each."""
        lines = [line for doc in [*self._docs.values(), *self._bare] for line in doc.findings()]
        if self.srt is not None:           # where each srt-slurm checkout's srtctl differs (once per checkout)
            srt = self.srt
            lines += list(dict.fromkeys(srt.note(pin) for pin in self._pins.values()))
        return lines

    def shadowed(self, files: Collection[str]) -> list[tuple[str, Shadowed]]:
        """(file, duplicate key) of the files read so far among `files` (as `shown` names them)."""
        return [(doc.file, s) for doc in [*self._docs.values(), *self._bare] if doc.file in files for s in doc.shadowed]

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
            view = self.checkout.view
            if isinstance(view, FolderView) and not view.root.exists():
                raise CookbookError.usage(f"--source {view.root}", "the folder does not exist; give an InferenceX checkout (a folder with configs/*-master.yaml)")
            raise CookbookError.usage(f"--source {self.checkout.name}", "no master config in this folder: expected configs/*-master.yaml "
                                                                       "(or inferencex-e2e/configs/); give an InferenceX checkout")
        for path in files:
            self._masters.add(path)
            doc = self.document(path)
            for key, entry in read_entries(doc).items():
                if key in found:
                    raise doc.error((key,), f"config key also defined in {found[key].doc.file}")
                found[key] = entry
        self._entries = found
        return found

    def runners(self, entry: ConfigEntry) -> RawYaml:
        """The parsed `configs/runners.yaml` beside the entry's master config (None when there is none)."""
        path = PurePosixPath(entry.doc.file).parent / "runners.yaml"
        return self.document(path).data if self.checkout.view.kind(path) == "file" else None

    def entry(self, key: str) -> ConfigEntry:
        entries = self.entries()
        if key not in entries:
            raise CookbookError.usage("--config", unknown("config key", key, entries) + f" (in the master configs of {self.checkout.name})")
        return entries[key]

    def selected(self, path: PurePosixPath, selector: str | None) -> EffectiveRecipe:
        key = (path, selector)
        if key not in self._selected:
            self._selected[key] = harness_placeholders(select(self.document(path), selector))
        return self._selected[key]

    def pinned_commit(self, entry: ConfigEntry, row: Row) -> str | None:
        """The srt-slurm commit a row's recipe is read at (with `--recipes`; after `recipe_path`), or None."""
        pin = self._pins.get((entry.key, row.index))
        return pin.commit if pin is not None else None

    def recipe_path(self, entry: ConfigEntry, row: Row) -> PurePosixPath:
        """The recipe file a row names (checked by `Checkout.recipe_path`; paths found are cached)."""
        ref = row.recipe.path
        if self._from_runner(entry, row):
            assert self.srt is not None
            key = (entry.key, row.index)
            if key not in self._runner_paths:
                self._runner_paths[key], self._pins[key] = self.srt.recipe(self.checkout.view, self._ix_time, entry, row,
                                                                           entry.doc.problem(row.recipe.where, ""))
            return self._runner_paths[key]
        hit = self._recipe_paths.get(ref)
        if hit is None:
            where, layout = entry.doc.problem(row.recipe.where, ""), self.checkout.layout_dir(entry.doc.file)
            try:
                hit = self.checkout.recipe_path(ref, where, layout)
            except CookbookError as exc:
                if row.recipe.fallback is None:
                    raise
                try:
                    hit = self.checkout.recipe_path(row.recipe.fallback, where, layout)
                except CookbookError:
                    raise CookbookError([replace(exc.problems[0], message=f"{exc.problems[0].message}, nor the runners' fallback "
                                                                          f"{row.recipe.fallback}")]) from None
            self._recipe_paths[ref] = hit
        return hit

    def _from_runner(self, entry: ConfigEntry, row: Row) -> bool:
        """Whether the row's recipe is the CONFIG_FILE its runner reads from the srt-slurm checkout it makes
        (with `--recipes`, for the root layout's master configs, whose runners clone srt-slurm)."""
        return (self.srt is not None and "additional-settings" in row.recipe.where
                and PurePosixPath(entry.doc.file).parts[:1] == ("configs",) and self.checkout.view.kind(PurePosixPath("runners")) == "dir")

    @staticmethod
    def shown(path: PurePosixPath) -> str:
        """How reports name `path` (relative to the checkout)."""
        return str(path)

    def point(self, entry: ConfigEntry, row: Row, conc: int, sets: Sequence[str] = (), unsets: Sequence[str] = ()) -> ResolvedPoint:
        # A point of this workspace's own entries, without --set/--unset, is resolved once per run.
        memo = not sets and not unsets and self._entries is not None and self._entries.get(entry.key) is entry
        key = (entry.key, row.index, conc)
        if memo and key in self._points:
            return self._points[key]
        path = self.recipe_path(entry, row)
        if _multi_node(path):               # an AMD multi-node script: its launches composed as server_sglang.sh does
            recipe = self._disagg_recipe(entry, row, conc, path)
        elif path.suffix == ".sh":          # a single-node benchmark script: run in a sandbox
            recipe = script_recipe(self.script_files(path), self.shown(path), entry, row, conc, self.runners(entry), self._runs)
        else:
            recipe = self.selected(path, self.selector(entry, row, conc))
            pin = self._pins.get((entry.key, row.index))
            if pin is not None:            # the srtctl the runner's checkout pins
                assert self.srt is not None
                recipe = self.srt.with_defaults(pin, recipe)
        point = ResolvedPoint(entry, row, conc, *overridden(recipe, sets, unsets), self.shown(path))
        if memo:
            self._points[key] = point
        return point

    def _disagg_recipe(self, entry: ConfigEntry, row: Row, conc: int, script: PurePosixPath) -> EffectiveRecipe:
        """The recipe of a point InferenceX starts with its AMD multi-node script (`recipes.amd_disagg`,
        `recipes.amd_atom_disagg` for atom-disagg), from the scripts and models file its rules name."""
        atom = entry.framework == "atom-disagg"
        table = (amd_atom_disagg if atom else amd_disagg).rules()
        folder = PurePosixPath(table["folder"])
        texts = {name: self.read_bytes(folder / name).decode("utf-8", "replace") for name in (table["server_script"], table["env_script"])}
        models = self.document(folder / table["models_file"])
        if atom:
            return amd_atom_disagg.atom_disagg_recipe(entry, row, self.shown(script), models, texts)
        return amd_disagg.disagg_recipe(entry, row, conc, self.shown(script), models, texts)

    def prefetch(self, entry: ConfigEntry) -> None:
        """Start the benchmark scripts of every point of `entry` in the background, several at once
        (`ScriptRuns.prefetch`), before its points are resolved one by one; what cannot be read here is
        left to `point` to report."""
        if entry.key in self._prefetched:
            return
        self._prefetched.add(entry.key)
        jobs = []
        try:
            rows = entry.rows
        except CookbookError:
            return
        for row in rows:
            try:
                path = self.recipe_path(entry, row)
                if path.suffix == ".sh" and not _multi_node(path):
                    script, runners = self.script_files(path), self.runners(entry)
                    jobs += [(script, self.shown(path), script_variables(entry, row, conc, runners)) for conc in row.concs]
            except CookbookError:
                continue
        self._runs.prefetch(jobs)

    def stop_scripts(self) -> None:
        """Drop the benchmark script runs started and not begun (a caller that is done, or stops early);
        a later `prefetch` starts what they lack again."""
        self._runs.stop()
        self._prefetched.clear()

    def selector(self, entry: ConfigEntry, row: Row, conc: int) -> str | None:
        """The variant of the row's recipe file that the point uses: the one the master config names,
        else the only override whose TP and concurrency match (None: a plain recipe or a benchmark script)."""
        if row.recipe.selector:
            return row.recipe.selector
        path = self.recipe_path(entry, row)
        return None if path.suffix == ".sh" else self._auto_selector(path, row, conc, entry.doc.problem(row.recipe.where, ""))

    def _auto_selector(self, path: PurePosixPath, row: Row, conc: int, where: Problem) -> str | None:
        """The one variant (`override_*`, `zip_override_*[i]`) whose stated settings match the row and
        the point (`_matches`); a file without variants is used as it is."""
        doc = self.document(path)
        names = [n for n in variant_names(doc) if n.startswith(("override_", "zip_override_"))]
        if not names:
            return None
        want = _wanted(row, conc)
        stated = {n: _stated(self.selected(path, n).data) for n in names}
        hits = _narrowed(stated, want)
        if len(hits) == 1:
            return hits[0]
        why = "no variant" if not hits else f"{len(hits)} variants ({', '.join(hits)})"
        said = ", ".join(f"{k}={v}" for k, v in want.items())
        raise CookbookError([replace(where, message=f"{why} of {doc.file} match the point ({said}); name one with FILE:SELECTOR")])

    def bare_recipe(self, ref: str, sets: Sequence[str] = (), unsets: Sequence[str] = ()) -> ResolvedPoint:
        """A recipe named on the command line as FILE[:SELECTOR], outside any master config."""
        file, _, selector = ref.partition(":")
        doc = read_yaml_file(Path(file), file, last_key_wins=True)
        self._bare.append(doc)
        return ResolvedPoint(None, None, None, *overridden(select(doc, selector or None), sets, unsets), file)


def _multi_node(path: PurePosixPath) -> bool:
    return path.suffix == ".sh" and path.parts[:2] == ("benchmarks", "multi_node")


_TP = ("tensor-parallel-size", "tp-size", "tensor_parallel_size", "tp")
_DP = ("data-parallel-size", "dp-size", "data_parallel_size", "dp")
_EP = ("expert-parallel-size", "ep-size", "moe_expert_parallel_size", "ep")
_DP_ATTENTION = ("enable-dp-attention", "enable_attention_dp")
_HOST_KV = ("enable-hierarchical-cache", "hicache-size", "hicache-ratio", "kv-offloading-size")


def _wanted(row: Row, conc: int) -> dict[str, RawYaml]:
    """What the master row and the point say a variant must be: TP, EP, DP attention, the KV mode, the concurrency."""
    worker = row.data.get("worker")
    side: dict[str, RawYaml] = worker if isinstance(worker, dict) else row.data
    kv = str(side.get("kv-offloading", row.data.get("kv-offloading", "none")))
    return {"tp": row.tp, "ep": side.get("ep", 1), "dp-attn": bool(side.get("dp-attn", False)), "kv-offloading": kv, "conc": conc}


_HARD = ("tp", "conc")
_SOFT = ("ep", "dp-attn", "kv-offloading")


def _narrowed(stated: dict[str, dict[str, RawYaml]], want: dict[str, RawYaml]) -> list[str]:
    """The variants that agree with `want` on TP and concurrency wherever they state them; then, of
    those, the ones that also agree on EP, DP attention and the KV mode, each in turn, as long as one
    still does (a recipe that states one only in some variants is not held to it in the others)."""
    hits = [n for n, got in stated.items() if all(_agrees(k, got.get(k), want[k]) for k in _HARD)]
    for key in _SOFT:
        narrower = [n for n in hits if _agrees(key, stated[n].get(key), want[key])]
        hits = narrower or hits
    return hits


def _agrees(key: str, got: RawYaml, want: RawYaml) -> bool:
    if got is None or want is None:
        return True
    if key == "tp":
        return want in got
    if key == "conc":
        return str(want) in got
    return bool(got == want)


def _stated(data: dict[str, RawYaml]) -> dict[str, RawYaml]:
    """What a variant (not validated yet: any shape) states of what `_wanted` asks: its TPs (TP, TP x DP,
    or the role's GPUs when no arg names TP), EP (vLLM's enable-expert-parallel: TP x DP), DP attention
    (else DP > 1), the KV mode (`benchmark.env.KV_OFFLOADING`, else `dram` with host-KV-cache args) and
    its concurrencies (`benchmark.env.CONC`)."""
    roles = _mapping(data.get("roles"))
    role = _mapping(roles.get("agg") or roles.get("prefill"))
    args = _mapping(role.get("args"))
    env = _mapping(_mapping(data.get("benchmark")).get("env"))
    tp, dp = _first_int(args, _TP), _first_int(args, _DP) or 1
    gpus = role.get("gpus") if isinstance(role.get("gpus"), int) else None
    ep = _first_int(args, _EP)
    if ep is None and args.get("enable-expert-parallel") is True and tp is not None:
        ep = tp * dp
    attention = next((bool(args[k]) for k in _DP_ATTENTION if k in args), dp > 1 if _first_int(args, _DP) is not None else None)
    kv = env.get("KV_OFFLOADING", "dram" if any(args.get(k) not in (None, False) for k in _HOST_KV) else None)
    conc = env.get("CONC")
    return {"tp": (tp, tp * dp) if tp is not None else (gpus,) if gpus is not None else None,
            "ep": ep, "dp-attn": attention, "kv-offloading": None if kv is None else str(kv),
            "conc": None if conc is None else tuple(map(str, conc)) if isinstance(conc, list) else (str(conc),)}


def _first_int(args: dict[str, RawYaml], keys: tuple[str, ...]) -> int | None:
    value = next((args[k] for k in keys if k in args), None)
    return int(value) if isinstance(value, int) or (isinstance(value, str) and value.isdigit()) else None


_HARNESS_VALUE = re.compile(r"@(fabric|dram)\.([A-Za-z0-9][A-Za-z0-9_-]*)")


def harness_placeholders(recipe: EffectiveRecipe) -> EffectiveRecipe:
    """The recipe with the InferenceX harness's site values (`@fabric.socket-ifname`, `@dram.per-gpu-bytes`:
    the NICs and host memory of the cluster it runs on, filled in at launch) as shell placeholders
    (`$FABRIC_SOCKET_IFNAME`, `$DRAM_PER_GPU_BYTES`): never published as the raw token; the recipe
    itself when it has none (the same object, so the points' shared work stays shared)."""
    if not _has_harness_value(recipe.data):
        return recipe
    changed = False

    def walk(node: RawYaml) -> RawYaml:
        nonlocal changed
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str) and "@" in node and _HARNESS_VALUE.search(node):
            changed = True
            return _HARNESS_VALUE.sub(lambda m: "$" + f"{m.group(1)}_{m.group(2)}".upper().replace("-", "_"), node)
        return node

    data = walk(recipe.data)
    return replace(recipe, data=data, parts=None) if changed else recipe


def overridden(recipe: EffectiveRecipe, sets: Sequence[str], unsets: Sequence[str]) -> Typed:
    """`normalise` of the recipe with --set/--unset applied. An --unset path not in the recipe as written
    may be one an error named: the path in the normalised (schema 2) recipe, for a recipe written in
    another shape (v1 `backend:` sections, `_` arg keys); it is removed there, and the result checked again."""
    from .schema import normalise

    try:
        return normalise(apply_overrides(recipe, sets, unsets))
    except CookbookError as exc:
        if not unsets or not exc.problems[0].key_path == "--unset":
            raise
        normal, _ = normalise(apply_overrides(recipe, sets, ()))
        try:
            return normalise(apply_overrides(normal, (), unsets))
        except CookbookError:
            raise exc from None


def _has_harness_value(node: RawYaml) -> bool:
    if isinstance(node, dict):
        return any(_has_harness_value(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_harness_value(v) for v in node)
    return isinstance(node, str) and "@" in node and _HARNESS_VALUE.search(node) is not None


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
