"""Recipes from an srt-slurm repository (`--recipes DIR`), found the way InferenceX's multi-node runners
find them: a row's `CONFIG_FILE=recipes/...` is a path of the srt-slurm checkout its runner makes
(`recipes.runners`: the repository, the ref, and the folders of the InferenceX tree copied over it).

- A file under a copied folder is the InferenceX tree's own file (what the copy put there);
- any other file is read from the srt-slurm repository at the commit the runner checks out, through
  `gitrepo.GitRepo` (objects only: no git program, no repository config), and named
  `srt-slurm@<commit, 12 digits>/<path>` in reports (`MOUNT`);
- a runner that clones another repository (a fork) or a ref the repository does not hold is refused
  with the ref named; a branch (which moves) is followed only where its tip in the repository is no
  newer than the InferenceX checkout's commit (so the tip is what the runner checked out since).

I/O: reads the InferenceX checkout's launchers and runner labels through its file view, and the
srt-slurm repository's objects.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Callable

import yaml

from ..errors import CookbookError, Problem
from .bundle import EffectiveRecipe
from .gitrepo import CommitView, GitRepo
from .load import parse_yaml_bytes
from .master import ConfigEntry, Row
from .runners import RULES, Clone, Node, Unreadable, clone_step, follow
from .view import FileView, is_git_repository

MOUNT = "srt-slurm@"
RUNNERS = PurePosixPath("runners")
_GITHUB = re.compile(r"(?:https://github\.com/|git@github\.com:)([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Pin:
    """Where a point's recipe is read: the launcher line that picked the clone, the clone, and the commit."""

    launcher: str
    clone: Clone
    commit: str

    @property
    def mount(self) -> str:
        return MOUNT + self.commit[:12]


class SrtSlurm:
    """The srt-slurm repository given with `--recipes`, and what the runners of one InferenceX checkout make of it."""

    def __init__(self, root: Path) -> None:
        if not is_git_repository(root):
            raise CookbookError.usage(f"--recipes {root}", "not a git repository: give a clone or mirror of "
                                      f"{RULES['upstream']} (the runners check out the ref each config needs, and so does cookbookgen)")
        self.root = root
        self.repo = GitRepo(root)
        self._steps: dict[str, tuple[list[Node], dict[str, str], bool] | Unreadable] = {}
        self._defaults: dict[tuple[str, str], tuple[Any, int, str] | None] = {}

    def view(self, mount: str) -> CommitView | None:
        """The files of the commit a mount name (`srt-slurm@<12 digits>`) names."""
        return self.repo.view(mount[len(MOUNT):]) if mount.startswith(MOUNT) else None

    def recipe(self, ix: FileView, ix_time: int | None, entry: ConfigEntry, row: Row, where: Problem) -> tuple[PurePosixPath, Pin]:
        """The path, in the InferenceX view or under a mount, of the file the row's runner reads as its
        CONFIG_FILE, and the runner's checkout; a `CookbookError` at `where` when it cannot be had here."""
        ref = row.recipe.path
        rel = PurePosixPath(ref)
        if rel.is_absolute() or ".." in rel.parts or not ref.strip():
            raise _at(where, f"recipe path {ref!r} must be relative and stay inside the checkout")
        pin = self.pin(ix, ix_time, entry, row, where)
        for dst, src in reversed(pin.clone.overlays):
            inside = rel.relative_to(dst) if rel.is_relative_to(dst) else None
            if inside is not None and ix.kind(PurePosixPath(src) / inside) == "file":
                return PurePosixPath(src) / inside, pin
        view = self.repo.view(pin.commit)
        if view is None or view.kind(rel) != "file":
            copied = f" (nor in what it copies over it from the tree: {', '.join(s for _, s in pin.clone.overlays)})" if pin.clone.overlays else ""
            raise _at(where, f"recipe file not found: {ref} in {_described(pin)}{copied}")
        return PurePosixPath(pin.mount) / rel, pin

    def with_defaults(self, pin: Pin, recipe: EffectiveRecipe) -> EffectiveRecipe:
        """A v1 recipe with the srtctl defaults of the pinned commit that differ between refs (rules
        `defaults`) written in where it leaves them unset, each with its srtctl source line as origin."""
        data = recipe.data
        if "backend" not in data or "roles" in data:
            return recipe
        out, origins = copy.deepcopy(data), dict(recipe.origins)
        for rule in _rules_for(data):
            path = tuple(rule["path"])
            holder = out.get(path[0]) if len(path) == 2 else None
            if len(path) != 2 or (holder is not None and not isinstance(holder, dict)) or (holder and path[1] in holder):
                continue
            value, line, file = self._default(pin, rule)
            out[path[0]] = {**(holder or {}), path[1]: value}
            origins[path] = (f"{pin.mount}/{file}", line)
        return replace(recipe, data=out, origins=origins, parts=None)

    def note(self, pin: Pin) -> str:
        """One line saying where the recipe came from and how the srtctl there differs from the one
        cookbookgen renders (rules `defaults`, applied, and `differences`, not applied)."""
        said = []
        for rule in RULES["defaults"]:
            if "engine" in rule:
                continue        # of one engine's recipes: `with_defaults` applies it, its origin names the line
            value, line, file = self._default(pin, rule)
            said.append(f"{'.'.join(rule['path'])} defaults to {value} ({file}:{line}; applied where the recipe leaves it unset)")
        for rule in RULES["differences"]:
            view = self.repo.view(pin.commit)
            text = view.read(PurePosixPath(rule["file"]), rule["file"], 1 << 22).decode("utf-8", "replace") if view and view.kind(PurePosixPath(rule["file"])) == "file" else ""
            hit = next(((m.group(1), i) for i, t in enumerate(text.splitlines(), 1) for m in [re.match(rule["pattern"], t)] if m), None)
            if hit is not None:
                said.append(f"{rule['what'].format(value=hit[0])} ({rule['file']}:{hit[1]}; not applied)")
        return f"recipes read from {_described(pin)}; srtctl there: " + "; ".join(said)

    def _default(self, pin: Pin, rule: dict[str, Any]) -> tuple[Any, int, str]:
        """The value, line and file of the first of the rule's `sources` that matches at the pinned commit."""
        key = (pin.commit, ".".join(rule["path"]))
        if key not in self._defaults:
            self._defaults[key] = next((hit for source in rule["sources"] for hit in [self._match(pin, source)] if hit), None)
        found = self._defaults[key]
        if found is None:
            files = ", ".join(s["file"] for s in rule["sources"])
            raise CookbookError.at(pin.mount, 0, ".".join(rule["path"]), f"cannot read srtctl's default at {_described(pin)} (from {files})")
        return found

    def _match(self, pin: Pin, source: dict[str, Any]) -> tuple[Any, int, str] | None:
        view = self.repo.view(pin.commit)
        rel = PurePosixPath(source["file"])
        if view is None or view.kind(rel) != "file":
            return None
        lines = view.read(rel, f"{pin.mount}/{rel}", 1 << 22).decode("utf-8", "replace").splitlines()
        start = next((i for i, t in enumerate(lines) if source["after"] in t), None) if "after" in source else 0
        if start is None:
            return None
        return next(((source["value"] if "value" in source else yaml.safe_load(m.group(1)), i + 1, source["file"])
                     for i in range(start, len(lines)) for m in [re.match(source["pattern"], lines[i])] if m), None)

    def pin(self, ix: FileView, ix_time: int | None, entry: ConfigEntry, row: Row, where: Problem) -> Pin:
        pins = []
        for launcher in launchers(ix, entry, where):
            pins.append(self._pin(ix, ix_time, launcher, entry, row, where))
        first = pins[0]
        if any((p.clone.url, p.commit, p.clone.overlays) != (first.clone.url, first.commit, first.clone.overlays) for p in pins[1:]):
            raise _at(where, f"runner {entry.data.get('runner')!r} may be any of {', '.join(p.launcher for p in pins)}, "
                             f"whose srt-slurm checkouts differ ({'; '.join(_described(p) for p in pins)})")
        return first

    def _pin(self, ix: FileView, ix_time: int | None, launcher: str, entry: ConfigEntry, row: Row, where: Problem) -> Pin:
        try:
            nodes, assigned, copies = self._step(ix, launcher)
            clone = follow(nodes, {**assigned, **variables(ix, entry, row)})
            if clone.helper is not None:
                helped(ix, clone)
        except Unreadable as exc:
            at = f"{launcher}:{exc.line}" if exc.line else launcher
            raise _at(where, f"cannot tell which srt-slurm checkout the runner makes ({at}: {exc.reason})") from None
        rel = PurePosixPath(row.recipe.path)
        if copies and rel.parts[:1] == ("recipes",):
            clone.overlays.append((str(rel), str(PurePosixPath(RULES["config_copy"]["tree_folder"]).joinpath(*rel.parts[1:]))))
        said = f"{launcher}:{clone.ref_line}" + (f" via {RULES['functions'][clone.helper]['version_file']}" if clone.helper else "")
        m = _GITHUB.fullmatch(clone.url or "")
        name = m.group(1) if m else clone.url
        ref = clone.ref or "main"
        if name != RULES["upstream"]:
            raise _at(where, f"the runner clones {name} at {ref} ({said}), a fork of {RULES['upstream']}: "
                             f"not readable from --recipes (which is {RULES['upstream']})")
        commit, branch = self._commit(ref)
        if commit is None:
            raise _at(where, f"the runner checks out {RULES['upstream']} {ref} ({said}), which --recipes {self.root} does not hold: "
                             "fetch that ref into it")
        if branch:
            tip = self.repo.committed(commit)
            if ix_time is None or tip is None or tip > ix_time:
                why = ("the InferenceX checkout's commit date cannot be read (it is not a git work tree with its own objects)" if ix_time is None else
                       f"its tip in --recipes ({commit[:12]}, {_day(tip)}) is newer than the InferenceX commit ({_day(ix_time)})")
                raise _at(where, f"the runner checks out the branch {ref} of {RULES['upstream']} ({said}), which moves: {why}; "
                                 "the commit it ran is not known")
        return Pin(said, clone, commit)

    def _commit(self, ref: str) -> tuple[str | None, bool]:
        """The commit `ref` names, and whether it is a branch."""
        named = self.repo.named(ref)
        if named is not None:
            return named[1], named[0].startswith(("refs/heads/", "refs/remotes/"))
        return (self.repo.commit(ref) if _COMMIT.fullmatch(ref) else None), False

    def _step(self, ix: FileView, launcher: str) -> tuple[list[Node], dict[str, str], bool]:
        """The launcher's clone step, its assignments before it, and whether it copies the tree's copy
        of the row's recipe over the checkout's afterwards (rules `config_copy`); read once."""
        hit = self._steps.get(launcher)
        if hit is None:
            text = ix.read(PurePosixPath(launcher), launcher, 1 << 20).decode("utf-8", "replace")
            lines = {line.strip() for line in text.splitlines()}
            try:
                hit = (*clone_step(text), all(want in lines for want in RULES["config_copy"]["lines"]))
            except Unreadable as exc:
                hit = exc
            self._steps[launcher] = hit
        if isinstance(hit, Unreadable):
            raise hit
        return hit


def _rules_for(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The `defaults` rules for a v1 recipe: all, but a rule of one `engine` only for that engine's recipes."""
    backend = data.get("backend")
    engine = backend.get("type", "sglang") if isinstance(backend, dict) else None
    return [rule for rule in RULES["defaults"] if rule.get("engine", engine) == engine]


def helped(ix: FileView, clone: Clone) -> None:
    """Fill in the clone a function of rules `functions` makes: its repository, the ref its version file
    names, the tree's folders it copies; `Unreadable` when the helper is not the one the rules describe."""
    rule = RULES["functions"][clone.helper]
    helper = PurePosixPath(rule["helper"])
    text = ix.read(helper, str(helper), 1 << 20).decode("utf-8", "replace") if ix.kind(helper) == "file" else ""
    lines = {line.strip() for line in text.splitlines()}
    missing = next((want for want in rule["helper_lines"] if want not in lines), None)
    if missing is not None:
        raise Unreadable(clone.line, f"{clone.helper} is not the one cookbookgen follows: {helper} has no line {missing!r}")
    version = PurePosixPath(rule["version_file"])
    words = ix.read(version, str(version), 4096).decode("utf-8", "replace").split() if ix.kind(version) == "file" else []
    if not words:
        raise Unreadable(clone.line, f"{clone.helper} clones the ref {version} names, and it names none")
    tree = PurePosixPath(rule["tree_folder"])
    folders = [name for name in ix.names(tree) if ix.kind(tree / name) == "dir"]
    clone.url, clone.ref, clone.ref_line = rule["repository"], words[0], clone.line
    clone.overlays = [(rule["configs_folder"] if name == rule["configs_folder"] else f"recipes/{name}", str(tree / name)) for name in folders]
    clone.overlays += [(dst, src) for dst, src in rule["extra"].items() if ix.kind(PurePosixPath(src)) == "dir"]


def launchers(ix: FileView, entry: ConfigEntry, where: Problem) -> list[str]:
    """The launchers a config's runner label starts (`configs/runners.yaml`; the workflow runs
    `runners/launch_${RUNNER_NAME%%_*}.sh`); a runner no label names is taken as a runner's own name."""
    runner = str(entry.data.get("runner", ""))
    names = [runner]
    labels_file = PurePosixPath(entry.doc.file).parent / "runners.yaml"
    if ix.kind(labels_file) == "file":
        labels = parse_yaml_bytes(ix.read(labels_file, str(labels_file), 1 << 20), str(labels_file)).data
        found = labels.get("labels", {}).get(runner) if isinstance(labels, dict) and isinstance(labels.get("labels"), dict) else None
        if isinstance(found, list) and found:
            names = [str(n) for n in found]
    out = []
    for name in dict.fromkeys(n.split("_", 1)[0] for n in names):
        path = RUNNERS / f"launch_{name}.sh"
        if re.fullmatch(r"[A-Za-z0-9.-]+", name) and ix.kind(path) == "file":
            out.append(str(path))
    if not out:
        raise _at(where, f"runner {runner!r}: no launcher {RUNNERS}/launch_<runner>.sh for it (the srt-slurm checkout it makes is unknown)")
    return out


_FROM: dict[str, Callable[[ConfigEntry, Row], Any]] = {
    "framework": lambda e, r: e.framework,
    "model-prefix": lambda e, r: e.data.get("model-prefix", ""),
    "precision": lambda e, r: e.data.get("precision", ""),
    "config-file": lambda e, r: r.recipe.path + (f":{r.recipe.selector}" if r.recipe.selector else ""),
    "spec-decoding": lambda e, r: r.data.get("spec-decoding", ""),
    "agentic": lambda e, r: "1" if r.scenario == "agentic-coding" else "0",
}


def variables(ix: FileView, entry: ConfigEntry, row: Row) -> dict[str, str]:
    """What the launcher is started with for one row (rules `variables`)."""
    out = {}
    for name, how in RULES["variables"].items():
        source = how.get("from")
        out[name] = str(how["value"]) if source is None else power(ix, row) if source == "power" else str(_FROM[source](entry, row) or "")
    return out


def power(ix: FileView, row: Row) -> str:
    """"1" when the tree's copy of the row's recipe opts into the dcgm-power lane (rules `power`), else "0"."""
    rel = PurePosixPath(row.recipe.path)
    if rel.parts[:1] != ("recipes",) or ".." in rel.parts:
        return "0"
    path = PurePosixPath(RULES["power"]["tree_folder"]).joinpath(*rel.parts[1:])
    if ix.kind(path) != "file":
        return "0"
    try:
        data = parse_yaml_bytes(ix.read(path, str(path), 1 << 22), str(path), last_key_wins=True).data
    except CookbookError:
        return "0"
    telemetry = data.get("telemetry") if isinstance(data, dict) else None
    on = isinstance(telemetry, dict) and telemetry.get("provider") == RULES["power"]["provider"] and telemetry.get("enabled") is True
    return "1" if on else "0"


def ix_time(source: Path | None) -> int | None:
    """The committer time of the InferenceX checkout's HEAD when it is a git work tree, else None."""
    if source is None or not (source / ".git").is_dir():
        return None
    try:
        repo = GitRepo(source)
        head = repo.commit("HEAD")
        return repo.committed(head) if head else None
    except CookbookError:
        return None


def _described(pin: Pin) -> str:
    return f"{RULES['upstream']} {pin.clone.ref or 'main'} ({pin.commit[:12]}, checked out by {pin.launcher})"


def _day(seconds: int | None) -> str:
    return "?" if seconds is None else dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%d")


def _at(where: Problem, message: str) -> CookbookError:
    return CookbookError([Problem(where.file, where.line, where.key_path, message)])
