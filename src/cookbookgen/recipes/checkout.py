"""Where things live in an InferenceX checkout (both layouts), read through its file view
(`recipes.view`: a working tree or a git commit). Paths are relative to the checkout's top.

- e2e layout: `<root>/inferencex-e2e/{configs/*master*.yaml, perf-changelog*.yaml, benchmarks/...}`;
- older layout: the same paths directly under `<root>` (a checkout may hold both: each master
  config's paths are relative to its own layout);
`CONFIG_FILE=recipes/<p>` and `srt-recipe: recipes/<p>` name `benchmarks/multi_node/srt-slurm-recipes/<p>`;
any other `srt-recipe` path is relative to the e2e root (or to the entry's `srt-recipe-dir`).
A recipe path that leaves the checkout (`..`, absolute paths, symlinks out) is refused.

When the checkout is a git work tree, `git_facts` reads its HEAD commit and the day each entry of the
perf-changelog was committed (a changelog entry carries no date of its own): the day of the oldest
commit, along HEAD's first parents, whose changelog still holds the entry (named by its `pr-link`
line, else by its whole text).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Iterable

from ..errors import CookbookError, Problem
from .view import TOP, FileView, Outside, matching, sub

MULTI_NODE_RECIPES = PurePosixPath("benchmarks/multi_node/srt-slurm-recipes")
E2E = PurePosixPath("inferencex-e2e")
HISTORY_LIMIT = 20_000      # first-parent commits walked to date the perf-changelog's entries, at most


@dataclass(frozen=True)
class GitFacts:
    """What git says about a checkout: its HEAD commit (None: not a git work tree) and, per line of
    the perf-changelog where an entry starts, the day that entry was committed."""

    commit: str | None = None
    changelog_days: dict[int, dt.date] = field(default_factory=dict)


@dataclass(frozen=True)
class Checkout:
    """One checkout as it is when first asked (its layout is looked up once)."""

    view: FileView

    @property
    def name(self) -> str:
        """How reports name the checkout."""
        return self.view.name

    @cached_property
    def e2e(self) -> PurePosixPath:
        return E2E if self.view.kind(E2E) == "dir" else TOP

    def master_files(self) -> list[PurePosixPath]:
        """The e2e layout's master configs, then the root layout's when a checkout holds both."""
        folders = [base / "configs" for base in dict.fromkeys((self.e2e, TOP))]
        return [p for configs in folders for p in matching(self.view, configs, "*master*.yaml") if self.view.kind(p) == "file"]

    def layout_dir(self, master_file: str) -> str | None:
        """`..` for a master config of the root layout in a checkout that also has the e2e layout (its
        paths are relative to the root, not to `inferencex-e2e/`); None otherwise."""
        return ".." if self.e2e != TOP and PurePosixPath(master_file).parts[:1] == ("configs",) else None

    def changelog(self) -> PurePosixPath | None:
        found = matching(self.view, self.e2e, "perf-changelog*.yaml")
        return found[0] if found else None

    @staticmethod
    def shown(path: PurePosixPath) -> str:
        return str(path)

    def git_facts(self) -> GitFacts:
        """The checkout's HEAD and the day each perf-changelog entry was committed, when the checkout is
        a git work tree (read by `gitrepo.GitRepo`: objects only, no git program, no repository config);
        an empty `GitFacts` otherwise (nothing is guessed)."""
        from .gitrepo import GitRepo

        root = getattr(self.view, "root", None)
        if not isinstance(root, Path) or not (root / ".git").is_dir():
            return GitFacts()
        try:
            repo = GitRepo(root)
            head = repo.commit("HEAD")
            changelog = self.changelog()
            if head is None or changelog is None:
                return GitFacts(head)
            versions = repo.first_parent_versions(head, changelog, HISTORY_LIMIT)
            return GitFacts(head, entry_days(versions))
        except CookbookError:      # a damaged repository: no facts rather than a guess
            return GitFacts()

    def recipe_path(self, ref: str, where: Problem, recipe_dir: str | None = None) -> PurePosixPath:
        """The file a master row names, checked to stay inside the checkout (its links resolved)."""
        rel = PurePosixPath(ref)
        if rel.is_absolute() or ".." in rel.parts or not ref.strip():
            raise CookbookError([replace(where, message=f"recipe path {ref!r} must be relative and stay inside the checkout")])
        if rel.parts and rel.parts[0] == "recipes":
            rel = MULTI_NODE_RECIPES.joinpath(*rel.parts[1:])
        elif recipe_dir:
            rel = PurePosixPath(recipe_dir) / rel
        try:
            path = self.view.locate(self.e2e / rel)
            if self.view.kind(path) != "file":
                raise CookbookError([replace(where, message=f"recipe file not found: {sub(self.e2e, str(rel))}")])
        except Outside as exc:
            raise CookbookError([replace(where, message=f"recipe path {ref!r} {exc.reason}")]) from None
        except OSError as exc:     # a name too long...
            raise CookbookError([replace(where, message=f"recipe path {ref!r} cannot be read: {exc.strerror}")]) from None
        except ValueError:         # a NUL byte, which no file name holds
            raise CookbookError([replace(where, message=f"recipe path {ref!r} cannot be read: it holds a NUL byte")]) from None
        except RuntimeError:       # what Python 3.11's `Path.resolve` raises for a loop of symbolic links
            raise CookbookError([replace(where, message=f"recipe path {ref!r} cannot be read: a loop of symbolic links")]) from None
        return path


def _entries(text: str) -> dict[str, int]:
    """The entries of a perf-changelog text (top-level `- ` items): each one's name (its `pr-link` line,
    else its whole text) -> the line it starts on (1-based)."""
    starts: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("- "):
            starts.append((number, [line]))
        elif starts and line.strip() and not line.startswith("#"):
            starts[-1][1].append(line)
    out: dict[str, int] = {}
    for number, lines in starts:
        link = next((x.strip() for x in lines if x.strip().lstrip("- ").startswith("pr-link:")), None)
        out.setdefault(link or "\n".join(lines), number)
    return out


def entry_days(versions: Iterable[tuple[dt.date, bytes | None]]) -> dict[int, dt.date]:
    """Line of each entry of the newest version -> the day of the oldest version that still holds it,
    from (commit day, changelog bytes or None) newest first, one per first-parent commit."""
    newest: dict[str, int] | None = None
    days: dict[str, dt.date] = {}
    alive: set[str] = set()
    last: tuple[dt.date, bytes | None] | None = None        # the previous commit's day and changelog
    for day, data in versions:
        if last is None or data != last[1]:       # most commits leave the changelog as it was: each version is read once
            names = _entries(data.decode("utf-8", "replace")) if data is not None else {}
            if newest is None:
                newest, alive = names, set(names)
            gone = alive - names.keys()
            for name in gone:
                days[name] = last[0] if last is not None else day     # the oldest day it was still there
            alive -= gone
            if not alive:
                break
        last = day, data
    for name in alive:
        days[name] = last[0] if last is not None else dt.date.min
    return {line: days[name] for name, line in (newest or {}).items() if name in days}
