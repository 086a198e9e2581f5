"""Where things live in an InferenceX checkout (both layouts), read through its file view
(`recipes.view`: a working tree or a git commit). Paths are relative to the checkout's top.

- e2e layout: `<root>/inferencex-e2e/{configs/*master*.yaml, perf-changelog*.yaml, benchmarks/...}`;
- older layout: the same paths directly under `<root>` (a checkout may hold both: each master
  config's paths are relative to its own layout);
`CONFIG_FILE=recipes/<p>` and `srt-recipe: recipes/<p>` name `benchmarks/multi_node/srt-slurm-recipes/<p>`;
any other `srt-recipe` path is relative to the e2e root (or to the entry's `srt-recipe-dir`).
A recipe path that leaves the checkout (`..`, absolute paths, symlinks out) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import PurePosixPath

from ..errors import CookbookError, Problem
from .view import TOP, FileView, Outside, matching, sub

MULTI_NODE_RECIPES = PurePosixPath("benchmarks/multi_node/srt-slurm-recipes")
E2E = PurePosixPath("inferencex-e2e")


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
