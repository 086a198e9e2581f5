"""`cookbookgen diff`: prove cookbook-recipe parity role by role, or name every difference.

Exit status: 0 parity, 1 any mismatch, 2 bad input (a `CookbookError`, printed by `cli.main`).
With no `--cookbook`, it checks the bundled `data/cookbook.yaml` (found beside the package, from any
folder) and, when `./site/` exists, the built site as well (the worse exit status wins).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import CookbookError
from ..project import EXAMPLE_MANIFEST, EXAMPLE_SOURCE, bundled, shown_default

if TYPE_CHECKING:  # the diff stack loads only when the command runs
    from ..cells.cache import RenderCache
    from ..diff.check import DiffResult
    from ..diff.sources import Cookbook
    from ..policy.rules import Policy
    from ..recipes.workspace import Workspace

DEFAULT_SITE = Path("site")


def register(subparsers: Any) -> None:
    d = subparsers.add_parser(
        "diff", help="check a cookbook against the recipes it came from, role by role",
        description="Compare a cookbook (our manifest, a built site, a cookbook JSON or a published AgentX module) with "
                    "the effective recipes of an InferenceX checkout. Exit 0 on parity, 1 on any mismatch, 2 on bad input.")
    d.add_argument("--cookbook", type=Path, action="append", metavar="M|MODULE.jsx|MODULE.json|SITE_DIR",
                   help=f"what to check (repeatable); default: {shown_default(EXAMPLE_MANIFEST)}, plus ./site/ when it exists")
    d.add_argument("--source", type=Path, metavar="ROOT",
                   help=f"InferenceX checkout; default: the manifest's source, else {shown_default(EXAMPLE_SOURCE)}")
    d.add_argument("--config", metavar="KEY", help="only this config key")
    d.add_argument("--logs", type=Path, metavar="DIR", help="also compare with the workers' ServerArgs log lines and srt-slurm config*.yaml under DIR")
    d.add_argument("--format", choices=["text", "json", "markdown"], default="text", help="report format (default: text)")
    d.add_argument("--policy", type=Path, help="extra policy rules (YAML), applied before the shipped ones")
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
    return [bundled(EXAMPLE_MANIFEST)] + ([DEFAULT_SITE] if DEFAULT_SITE.is_dir() else [])


def _checkout(args: argparse.Namespace, cookbook: Cookbook, previous: Path | None) -> Path:
    source = getattr(args, "source", None) or cookbook.checkout or previous or bundled(EXAMPLE_SOURCE)
    if not Path(source).is_dir():
        raise CookbookError.at(str(source), 0, "--source", "checkout not found")
    return Path(source)


def run_diff(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the diff for parsed arguments; returns the exit status (0 parity, 1 mismatch).

    Text and Markdown print one report per cookbook. JSON prints one report, or, when several
    cookbooks are checked (the default with a built site), `{"exit": N, "reports": [...]}`.
    """
    from ..cells.cache import cache_run

    stream = out or sys.stdout
    fmt = getattr(args, "format", "text") or "text"
    reports: list[tuple[str, int] | DiffResult] = []
    workspaces: dict[Path, Workspace] = {}    # one per checkout: a manifest's points are resolved once, for rendering and checking
    with cache_run(getattr(args, "cache", None)) as cache:
        source: Path | None = None
        for path in _cookbooks(args):
            report, source = _report(args, path, fmt, _is_tty(stream), workspaces, cache, source)
            reports.append(report)
    if fmt == "json":
        from ..diff.report import json_doc

        results = [r for r in reports if not isinstance(r, tuple)]
        docs = [json_doc(r) for r in results]
        doc = docs[0] if len(docs) == 1 else {"exit": max(r.exit_code for r in results), "reports": docs}
        stream.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        return max(r.exit_code for r in results)
    texts = [r for r in reports if isinstance(r, tuple)]     # text and Markdown reports are (text, exit status)
    for text, _ in texts:
        stream.write(text)
    return max(code for _, code in texts)


def _report(args: argparse.Namespace, path: Path, fmt: str, color: bool, workspaces: dict[Path, Workspace],
            cache: RenderCache | None, previous: Path | None) -> tuple[tuple[str, int] | DiffResult, Path]:
    """One cookbook's report: (text, exit status) for text and Markdown, the whole result for JSON;
    and the checkout it was checked against."""
    from ..cells.assemble import workspace_for
    from ..diff.check import check, report_text
    from ..diff.report import as_markdown, as_text
    from ..diff.sources import read_cookbook
    from ..policy.rules import load_policy

    extra = getattr(args, "policy", None)
    only = getattr(args, "config", None)
    cookbook = read_cookbook(path, load_policy(extra) if extra else None, workspaces, cache)
    policy = cookbook.policy if cookbook.policy is not None else load_policy(extra or cookbook.policy_file)
    source = _checkout(args, cookbook, previous)
    ws = workspace_for(source, workspaces)
    if fmt != "json" and getattr(args, "logs", None) is None:
        return report_text(cookbook.source, ws, policy, only, fmt == "markdown", color, getattr(args, "jobs", None), cache), source
    result = _with_logs(args, check(cookbook.source, ws, policy, only), policy)
    if fmt == "json":
        return result, source
    text = as_markdown(result) if fmt == "markdown" else as_text(result, color=color)
    return (text, result.exit_code), source


def _is_tty(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def _with_logs(args: argparse.Namespace, result: DiffResult, policy: Policy) -> DiffResult:
    logs = getattr(args, "logs", None)
    if logs is None:
        return result
    points = [pair.published for pair in result.pairs]
    if not points:
        raise CookbookError.at(str(logs), 0, "--logs", "no cookbook point was paired with the checkout, so there is nothing to compare the logs with")
    from ..diff.check import DiffResult
    from ..diff.logcheck import check_logs
    from ..diff.sources import read_logs

    found = check_logs(read_logs(logs), points, policy)
    return DiffResult(result.cookbook, result.kind, result.checkout, result.configs, result.findings + tuple(found),
                      result.not_in_checkout, result.notes, result.pairs)
