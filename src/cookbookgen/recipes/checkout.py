"""Where things live in an InferenceX checkout (both layouts). I/O: directory listings only.

- e2e layout: `<root>/inferencex-e2e/{configs/*master*.yaml, perf-changelog*.yaml, benchmarks/...}`;
- older layout: the same paths directly under `<root>` (a checkout may hold both: each master
  config's paths are relative to its own layout);
`CONFIG_FILE=recipes/<p>` and `srt-recipe: recipes/<p>` name `benchmarks/multi_node/srt-slurm-recipes/<p>`;
any other `srt-recipe` path is relative to the e2e root (or to the entry's `srt-recipe-dir`).
A recipe path that leaves the checkout (`..`, absolute paths, symlinks out) is refused.

When the checkout is a git work tree, `git_facts` reads its HEAD commit and the day each line of
the perf-changelog was committed (one `git blame`): a changelog entry carries no date of its own.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path, PurePosixPath

from ..errors import CookbookError, Problem

MULTI_NODE_RECIPES = PurePosixPath("benchmarks/multi_node/srt-slurm-recipes")
GIT_SECONDS = 60


@dataclass(frozen=True)
class GitFacts:
    """What git says about a checkout: its HEAD commit (None: not a git work tree) and, per line of
    the perf-changelog, the day the line was committed."""

    commit: str | None = None
    changelog_days: dict[int, dt.date] = field(default_factory=dict)


@dataclass(frozen=True)
class Checkout:
    """One checkout as it is when first asked (its layout and real root are looked up once)."""

    root: Path

    @cached_property
    def e2e(self) -> Path:
        nested = self.root / "inferencex-e2e"
        return nested if nested.is_dir() else self.root

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    def master_files(self) -> list[Path]:
        """The e2e layout's master configs, then the root layout's when a checkout holds both."""
        folders = [base / "configs" for base in dict.fromkeys((self.e2e, self.root))]
        return [p for configs in folders if configs.is_dir() for p in sorted(configs.glob("*master*.yaml")) if p.is_file()]

    def layout_dir(self, master_file: str) -> str | None:
        """`..` for a master config of the root layout in a checkout that also has the e2e layout (its
        paths are relative to the root, not to `inferencex-e2e/`); None otherwise."""
        return ".." if self.e2e != self.root and PurePosixPath(master_file).parts[:1] == ("configs",) else None

    def changelog(self) -> Path | None:
        found = sorted(self.e2e.glob("perf-changelog*.yaml"))
        return found[0] if found else None

    def git_facts(self) -> GitFacts:
        """The checkout's HEAD and the changelog lines' commit days, when the checkout is a git work
        tree with git on this host; an empty `GitFacts` otherwise (nothing is guessed)."""
        git = shutil.which("git")
        if git is None or not (self.root / ".git").exists():
            return GitFacts()
        run = {"capture_output": True, "text": True, "timeout": GIT_SECONDS, "env": {"PATH": os.defpath, "LC_ALL": "C"}}
        try:
            head = subprocess.run([git, "-C", str(self.root), "rev-parse", "--verify", "HEAD"], **run)  # type: ignore[call-overload]
            if head.returncode != 0:
                return GitFacts()
            days: dict[int, dt.date] = {}
            changelog = self.changelog()
            if changelog is not None:
                rel = str(changelog.relative_to(self.root))
                blame = subprocess.run([git, "-C", str(self.root), "blame", "--line-porcelain", "HEAD", "--", rel], **run)  # type: ignore[call-overload]
                days = _blame_days(blame.stdout if blame.returncode == 0 else "")
        except (OSError, subprocess.TimeoutExpired):
            return GitFacts()
        return GitFacts(head.stdout.strip(), days)

    def shown(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def recipe_path(self, ref: str, where: Problem, recipe_dir: str | None = None) -> Path:
        """The file a master row names, checked to stay inside the checkout."""
        rel = PurePosixPath(ref)
        if rel.is_absolute() or ".." in rel.parts or not ref.strip():
            raise CookbookError([replace(where, message=f"recipe path {ref!r} must be relative and stay inside the checkout")])
        if rel.parts and rel.parts[0] == "recipes":
            rel = MULTI_NODE_RECIPES.joinpath(*rel.parts[1:])
        elif recipe_dir:
            rel = PurePosixPath(recipe_dir) / rel
        try:
            path = (self.e2e / rel).resolve()
            if not path.is_relative_to(self.real_root):
                raise CookbookError([replace(where, message=f"recipe path {ref!r} leaves the checkout")])
            if not path.is_file():
                raise CookbookError([replace(where, message=f"recipe file not found: {self.shown(Path(os.path.normpath(self.e2e / rel)))}")])
        except OSError as exc:     # a name too long...
            raise CookbookError([replace(where, message=f"recipe path {ref!r} cannot be read: {exc.strerror}")]) from None
        except RuntimeError:       # what Python 3.11's `Path.resolve` raises for a loop of symbolic links
            raise CookbookError([replace(where, message=f"recipe path {ref!r} cannot be read: a loop of symbolic links")]) from None
        return path


def _blame_days(porcelain: str) -> dict[int, dt.date]:
    """Line number -> the UTC day of its commit, from `git blame --line-porcelain` output."""
    days: dict[int, dt.date] = {}
    line, when = 0, None
    for text in porcelain.splitlines():
        head = text.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and head[1].isdigit() and head[2].isdigit():
            line = int(head[2])
        elif text.startswith("committer-time ") and head[1].isdigit():
            when = dt.datetime.fromtimestamp(int(head[1]), dt.timezone.utc).date()
        elif text.startswith("\t") and when is not None:
            days[line] = when
    return days
