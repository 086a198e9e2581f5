"""`cookbookgen diff`: prove cookbook-recipe parity role by role, or name every difference.

Exit status: 0 parity, 1 any mismatch or any unpaired cell (unless `--allow-unpaired`) or nothing
checked, 2 bad input (a `CookbookError`, printed by `cli.main`). It checks what `--cookbook` names
(repeatable; one verdict over all of them), with none the bundled `data/cookbook.yaml` (found beside
the package, from any folder) and nothing else; its first line says what it compared.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import CookbookError
from ..project import EXAMPLE_MANIFEST, EXAMPLE_SOURCE, bundled, shown_default

if TYPE_CHECKING:  # the diff stack loads only when the command runs
    from ..cells.cache import RenderCache
    from ..diff.check import GitTrees
    from ..diff.result import DiffResult
    from ..diff.model import Tally
    from ..diff.sources import Cookbook
    from ..policy.rules import Policy
    from ..recipes.workspace import Workspace



def register(subparsers: Any) -> None:
    d = subparsers.add_parser(
        "diff", help="check a cookbook against the recipes it came from, role by role",
        description="Compare a cookbook (our manifest, a built site, a cookbook JSON or a published AgentX module) with "
                    "the effective recipes of an InferenceX checkout. Exit 0 on parity, 1 on any mismatch or unpaired cell, 2 on bad input.")
    d.add_argument("--cookbook", type=Path, action="append", metavar="COOKBOOK",
                   help=f"what to check (repeatable); default: {shown_default(EXAMPLE_MANIFEST)}; after build, --cookbook site checks the built site")
    d.add_argument("--source", type=Path, metavar="ROOT",
                   help="InferenceX checkout, or a git repository (clone or bare) read at each cell's cited commit; "
                        f"default: the manifest's source, else {shown_default(EXAMPLE_SOURCE)}")
    d.add_argument("--config", metavar="KEY", help="only this config key")
    d.add_argument("--cell", metavar="ID", help="only this published cell (e.g. a module cell id)")
    d.add_argument("--allow-unpaired", action="store_true", help="report unpaired cells without failing (exit 0 when nothing mismatches)")
    d.add_argument("--verbose", action="store_true", help="also list every config and point with its count per role and class, and the excluded settings")
    d.add_argument("--explain", metavar="CLASS", help="print what a finding class or unpaired reason means, and exit")
    d.add_argument("--recipes", type=Path, metavar="DIR", help="an srt-slurm git repository: multi-node rows' CONFIG_FILE recipes are "
                                                                "read from the checkout their runner makes of it (as build --recipes)")
    d.add_argument("--logs", type=Path, metavar="DIR", help="also compare with the workers' ServerArgs log lines and srt-slurm config*.yaml under DIR")
    d.add_argument("--format", choices=["text", "json", "markdown"], default="text", help="report format (default: text)")
    d.add_argument("--policy", type=Path, metavar="FILE", help="extra policy rules (YAML), applied before the shipped ones")
    d.add_argument("--cache", type=Path, metavar="DIR",
                   help="reuse the rendered configs of a content-hash cache (e.g. the .cookbookgen-cache of `cookbookgen build`) "
                        "for a manifest's points; every setting is still compared")
    d.add_argument("--jobs", type=_positive, metavar="N",
                   help="worker processes that check the configs for a text or Markdown report "
                        "(default: one per core, at most 4; 1: all in this process)")
    d.set_defaults(run=run_diff)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes, 1 or more (received {text!r})")
    return int(text)


def _cookbooks(args: argparse.Namespace) -> list[Path]:
    given = getattr(args, "cookbook", None)
    if given:
        return [given] if isinstance(given, Path) else list(given)
    return [bundled(EXAMPLE_MANIFEST)]     # only what it is given: a ./site of any kind is never added unasked


def _checkout(args: argparse.Namespace, cookbook: Cookbook, previous: Path | None) -> Path:
    source = getattr(args, "source", None) or cookbook.checkout or previous or bundled(EXAMPLE_SOURCE)
    if not Path(source).is_dir():
        raise CookbookError.usage(f"--source {source}", "the folder does not exist; give an InferenceX checkout or a git repository")
    return Path(source)


def run_diff(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the diff for parsed arguments; returns the exit status (the verdict of every cookbook checked)."""
    from ..cells.cache import cache_run
    from ..diff.model import Tally

    stream = out or sys.stdout
    if getattr(args, "explain", None):
        from ..diff.explain import explain_class

        stream.write(explain_class(args.explain) + "\n")
        return 0
    fmt = getattr(args, "format", "text") or "text"
    allow = bool(getattr(args, "allow_unpaired", False))
    parts: list[str] = []
    results: list[DiffResult] = []
    checked: list[tuple[str, str, str]] = []
    tally = Tally()
    workspaces: dict[Path, Workspace] = {}    # one per checkout: a manifest's points are resolved once, for rendering and checking
    with cache_run(getattr(args, "cache", None)) as cache:
        source: Path | None = None
        for path in _cookbooks(args):
            part, part_tally, what, source = _report(args, path, fmt, _is_tty(stream), workspaces, cache, source)
            if isinstance(part, str):
                parts.append(part)
            else:
                results.append(part)
            tally += part_tally
            checked.append(what)
    from ..diff.report import fit, json_doc, verdict

    if fmt == "json":
        stream.write(json.dumps(json_doc(results, allow), indent=1, ensure_ascii=False) + "\n")
    else:
        text = verdict(checked, tally, allow, fmt == "markdown", _is_tty(stream)) + "".join(parts)
        stream.write(fit(text) if fmt == "markdown" else text)
    return tally.verdict(allow)[0]


def _report(args: argparse.Namespace, path: Path, fmt: str, color: bool, workspaces: dict[Path, Workspace],
            cache: RenderCache | None, previous: Path | None) -> tuple[str | DiffResult, Tally, tuple[str, str, str], Path]:
    """One cookbook's part (its text for text and Markdown, the whole result for JSON), its tally, what
    was checked, and the checkout it was checked against."""
    from ..cells.assemble import workspace_for
    from ..diff.check import check, report_text
    from ..diff.report import as_markdown, as_text
    from ..diff.sources import read_cookbook
    from ..policy.rules import load_policy
    from ..recipes.workspace import Workspace

    extra = getattr(args, "policy", None)
    only = getattr(args, "config", None)
    verbose = bool(getattr(args, "verbose", False))
    cookbook = read_cookbook(path, load_policy(extra) if extra else None, workspaces, cache)
    policy = cookbook.policy if cookbook.policy is not None else load_policy(extra or cookbook.policy_file)
    source = _checkout(args, cookbook, previous)
    recipes = getattr(args, "recipes", None)
    trees = _git_trees(source, recipes)
    if trees is None and recipes is not None:
        workspaces.setdefault(source.resolve(), Workspace(source.resolve(), recipes))
    ws = workspace_for(source, workspaces) if trees is None else trees.head
    published = replace(cookbook.source, cell=getattr(args, "cell", None))
    what = (published.name, published.kind, trees.name if trees else ws.checkout.name)
    if fmt != "json" and getattr(args, "logs", None) is None:
        text, tally = report_text(published, ws, policy, only, fmt == "markdown", color, getattr(args, "jobs", None), cache, verbose, trees)
        return text, tally, what, source
    result = _with_logs(args, check(published, ws, policy, only, trees), policy)
    if fmt == "json":
        return result, result.tally, what, source
    text = as_markdown(result) if fmt == "markdown" else as_text(result, color=color, verbose=verbose)
    return text, result.tally, what, source


def _git_trees(source: Path, recipes: Path | None = None) -> GitTrees | None:
    """With `--source` a git repository, each cell is read at its cited commit, from the repository's
    objects (`recipes.gitrepo`; None: a plain folder); `recipes`: see `Workspace`."""
    from ..diff.check import GitTrees
    from ..recipes.view import is_git_repository
    from ..recipes.workspace import Workspace

    if not is_git_repository(source):
        return None
    from ..recipes.gitrepo import GitRepo

    repo = GitRepo(source)
    made: dict[str, Workspace] = {}

    def at(commit: str) -> tuple[Workspace | None, str]:
        view = repo.view(commit)
        if view is None:
            return None, f"{source}@{commit}"
        if view.sha not in made:
            made[view.sha] = Workspace(view, recipes)
        return made[view.sha], view.name
    head, _ = at("HEAD")
    if head is None:
        raise CookbookError.at(str(source), 0, "--source", "a git repository without a HEAD commit")
    return GitTrees(f"{source} (git)", at, head)


def _is_tty(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def _with_logs(args: argparse.Namespace, result: DiffResult, policy: Policy) -> DiffResult:
    logs = getattr(args, "logs", None)
    if logs is None:
        return result
    points = [pair.published for pair in result.pairs]
    if not points:
        raise CookbookError.at(str(logs), 0, "--logs", "no cookbook point was paired with the checkout, so there is nothing to compare the logs with")
    from ..diff.logcheck import check_logs
    from ..diff.sources import read_logs

    return replace(result, findings=result.findings + tuple(check_logs(read_logs(logs), points, policy)))
