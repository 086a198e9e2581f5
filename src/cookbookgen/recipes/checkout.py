"""Where things live in an InferenceX checkout (both layouts). I/O: directory listings only.

- e2e layout: `<root>/inferencex-e2e/{configs/*master*.yaml, perf-changelog*.yaml, benchmarks/...}`;
- older layout: the same paths directly under `<root>` (a checkout may hold both: each master
  config's paths are relative to its own layout);
`CONFIG_FILE=recipes/<p>` and `srt-recipe: recipes/<p>` name `benchmarks/multi_node/srt-slurm-recipes/<p>`;
any other `srt-recipe` path is relative to the e2e root (or to the entry's `srt-recipe-dir`).
A recipe path that leaves the checkout (`..`, absolute paths, symlinks out) is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path, PurePosixPath

from ..errors import CookbookError, Problem

MULTI_NODE_RECIPES = PurePosixPath("benchmarks/multi_node/srt-slurm-recipes")


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
