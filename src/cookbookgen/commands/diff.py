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
                   help="worker processes that check a manifest's configs for a text or Markdown report "
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
    With `--cache`, a manifest's report reuses the sections of unchanged configs (`diff.sections`).
    """
    stream = out or sys.stdout
    fmt = getattr(args, "format", "text") or "text"
    color = _is_tty(stream)
    reports = _reports(args, fmt, color)
    from ..diff.report import as_markdown, as_text, json_doc

    if fmt == "json":
        results = [r for r in reports if not isinstance(r, tuple)]
        docs = [json_doc(r) for r in results]
        doc = docs[0] if len(docs) == 1 else {"exit": max(r.exit_code for r in results), "reports": docs}
        stream.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        return max(r.exit_code for r in results)
    codes = []
    for report in reports:
        if isinstance(report, tuple):
            text, code = report
        else:
            text, code = (as_markdown(report) if fmt == "markdown" else as_text(report, color=color)), report.exit_code
        stream.write(text)
        codes.append(code)
    return max(codes)


def _reports(args: argparse.Namespace, fmt: str, color: bool) -> list[DiffResult | tuple[str, int]]:
    """A full check (DiffResult) or a ready report (text, exit status) per cookbook."""
    from ..cells.cache import cache_run

    reports: list[DiffResult | tuple[str, int]] = []
    # One Workspace per checkout: a manifest's points are resolved once, for rendering and for checking.
    workspaces: dict[Path, Workspace] = {}
    with cache_run(getattr(args, "cache", None)) as cache:
        _check_each(args, fmt, color, reports, workspaces, cache)
    return reports


def _check_each(args: argparse.Namespace, fmt: str, color: bool, reports: list[DiffResult | tuple[str, int]],
                workspaces: dict[Path, Workspace], cache: RenderCache | None) -> None:
    from ..cells.assemble import workspace_for
    from ..policy.rules import load_policy

    extra = getattr(args, "policy", None)
    source: Path | None = None
    from ..diff import sections

    for path in _cookbooks(args):
        if sections.applies(path, fmt, getattr(args, "logs", None)):
            # A manifest's report section by section: sections of unchanged configs come from the cache.
            found = sections.manifest_report(path, cache, extra, getattr(args, "source", None), getattr(args, "config", None),
                                           fmt, color, workspaces, getattr(args, "jobs", None))
            if found is not None:
                text, code, source = found
                reports.append((text, code))
                continue
        from ..diff.check import check
        from ..diff.sources import read_cookbook

        cookbook = read_cookbook(path, load_policy(extra) if extra else None, workspaces, cache)
        policy = cookbook.policy if cookbook.policy is not None else load_policy(extra or cookbook.policy_file)
        source = _checkout(args, cookbook, source)
        result = check(cookbook.published, workspace_for(source, workspaces), policy, getattr(args, "config", None))
        reports.append(_with_logs(args, result, policy))


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
