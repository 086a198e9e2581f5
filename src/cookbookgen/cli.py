"""The command line: parse arguments, call the stages, print. The only place that prints problems.

Exit status: 0 success, 1 a diff found a mismatch, 2 bad input or usage, 128 + the signal number when
stopped by one (130 Ctrl-C, 143 SIGTERM; `build` and `serve` clean up first, see `publish.site`).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NoReturn, Sequence

from . import __version__
from .commands import agentx, diff, flags, listing, site
from .errors import CookbookError
from .project import EXAMPLE_SOURCE, bundled, shown_default
from .text import one_line, unknown

if TYPE_CHECKING:  # the stages are imported by the handlers that use them, so `--help` and `diff` start fast
    from .pipeline import RenderedPoint
    from .policy.rules import Policy
    from .recipes.workspace import Workspace
    from .render.model import Block

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise CookbookError.usage(self.prog.removeprefix("cookbookgen").strip(), message)   # the subcommand, if any


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cookbookgen", description="Launch commands for LLM-serving cookbooks, checked against the benchmarked srt-slurm recipes.")
    parser.add_argument("--version", action="version", version=f"cookbookgen {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("render", help="resolve one benchmark point and print its launch commands",
                       description="Resolve one point of an InferenceX config (or a bare recipe) into role-by-role launch commands.")
    r.add_argument("--source", type=Path, metavar="ROOT", help=f"InferenceX checkout (either layout); default: {shown_default(EXAMPLE_SOURCE)}")
    r.add_argument("--config", metavar="KEY", help="config key of the master config, e.g. dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg")
    r.add_argument("--recipes", type=Path, metavar="DIR", help=RECIPES_HELP)
    r.add_argument("--point", metavar="POINT", help="point label c<conc> (when unique in the config) or full id such as tp4/c16")
    r.add_argument("--recipe", help="render a bare recipe instead: FILE[:selector] (override_x, zip_override_x[i], sweep[i])")
    r.add_argument("--model", help="Hugging Face id for --recipe when the recipe does not name one")
    r.add_argument("--cluster", help="for --recipe: the cluster it ran on, for cluster-provided env (e.g. gb300-nv); a --config point uses its master's runner")
    r.add_argument("--role", help="only blocks of this role or kind (prefill, decode, agg, etcd, nats, nginx, dynamo-frontend, sglang-router, ...)")
    r.add_argument("--format", choices=["text", "json", "sh", "slurm"], default="text",
                   help="text: commands as a reader copies them; json: blocks and settings; sh: a launch script, one process per call; "
                        "slurm: one sbatch job that starts every process on its node (srun, pyxis)")
    r.add_argument("--out", type=Path, metavar="FILE", help="write to FILE instead of standard output (a script is made executable)")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=VALUE", help="set a recipe value (YAML scalar or list) after the override")
    r.add_argument("--unset", dest="unsets", action="append", default=[], metavar="PATH", help="remove a recipe value after the override")
    r.add_argument("--policy", type=Path, metavar="FILE", help="extra policy rules (YAML), applied before the shipped ones")
    r.set_defaults(run=_cmd_render)
    listing.register(sub)
    site.register(sub)
    diff.register(sub)
    agentx.register(sub)
    flags.register(sub)
    for name in TRUSTING:
        sub.choices[name].add_argument("--trust-scripts", action="store_true",
                                       help="where the sandbox (bubblewrap) cannot start, run the checkout's benchmark scripts anyway, "
                                            "with the stubs alone (only for a checkout you trust)")
    return parser


RECIPES_HELP = ("an srt-slurm git repository (clone or mirror of NVIDIA/srt-slurm): a multi-node row's CONFIG_FILE is read from the "
                "checkout its runner makes (runners/launch_*.sh: the ref it checks out, the tree's folders it copies over it)")
TRUSTING = ("render", "list", "build", "serve", "diff", "export")    # the commands that may run benchmark scripts


# A run builds hundreds of thousands of long-lived, acyclic objects (parsed recipes, blocks, findings).
# With CPython's default thresholds (700, 10, 10) the cyclic collector rescans them over and over:
# a third of a large diff's time (benchmarks/bench.py). Collections stay on, just less often.
GC_THRESHOLDS = (50_000, 10, 10)


def main(argv: Sequence[str] | None = None) -> int:
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        args = build_parser().parse_args(argv)
        if hasattr(args, "trust_scripts"):
            from .recipes.script import trust_scripts

            trust_scripts(args.trust_scripts)
        run: Callable[[argparse.Namespace], int] = args.run
        return run(args)
    except CookbookError as exc:
        for problem in exc.problems:
            print(f"cookbookgen: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt as exc:   # Ctrl-C, or a signal `publish.site.stop_on_signals` turned into one
        print("cookbookgen: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)
    except OSError as exc:   # a path the input names that the system refuses (too long, unreadable): still one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"cookbookgen: error: {one_line(where + (exc.strerror or str(exc)))}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _cmd_render(args: argparse.Namespace) -> int:
    from .pipeline import render_config_point
    from .policy.rules import load_policy
    from .recipes.workspace import Workspace

    policy = load_policy(args.policy)
    if args.recipes and args.recipe:
        raise CookbookError.usage("--recipes", "only with --config: a bare --recipe names its file itself")
    workspace = Workspace(Path(".") if args.recipe else args.source or bundled(EXAMPLE_SOURCE), args.recipes)
    if args.recipe:
        rendered = _render_bare(args, policy, workspace)
    else:
        if not args.config or not args.point:
            raise CookbookError.usage("render", "give --config KEY --point LABEL, or --recipe FILE[:selector]")
        for option in ("--model", "--cluster"):
            if getattr(args, option[2:]):
                raise CookbookError.usage(option, "only with --recipe; a config's model and cluster come from its master config")
        rendered = render_config_point(workspace, policy, args.config, args.point, args.sets, args.unsets)
    blocks = [b for b in rendered.deployment.blocks if args.role is None or args.role in (b.role, b.kind)]
    if not blocks:
        kinds = dict.fromkeys(name for b in rendered.deployment.blocks for name in (b.role, b.kind) if name)
        raise CookbookError.usage("--role", unknown("role or kind", args.role, kinds))
    if args.format == "slurm" and args.role:
        raise CookbookError.usage("--role", "the sbatch job starts every process; drop --role, or use --format sh")
    text = _FORMATS[args.format](rendered, blocks)
    if args.out is None:
        sys.stdout.write(text)
    else:
        from .files import write_atomic

        write_atomic(args.out, text, durable=True, executable=args.format in ("sh", "slurm"))
    for finding in workspace.findings():      # never silent: a duplicate key's shadowed value, with both lines
        sys.stderr.write(f"cookbookgen: note: {finding}\n")
    return EXIT_OK


def _render_bare(args: argparse.Namespace, policy: Policy, workspace: Workspace) -> RenderedPoint:
    from .pipeline import RenderedPoint
    from .recipes.workspace import model_id
    from .render.deploy import RenderContext, render

    if args.cluster and args.cluster not in policy.clusters:
        raise CookbookError.usage("--cluster", unknown("cluster", args.cluster, sorted(policy.clusters)))
    point = workspace.bare_recipe(args.recipe, args.sets, args.unsets)
    model = args.model or model_id(point)
    return RenderedPoint(point, render(point.recipe, point.typed, RenderContext(model, policy, args.cluster)))


def _heading(rendered: RenderedPoint) -> list[str]:
    p = rendered.point
    d = rendered.deployment
    what = f"{p.entry.key} {p.point_id}" if p.entry else p.recipe.label
    return [f"{what}: {d.model}, {d.gpus} GPUs on {d.nodes} node(s)", f"recipe {p.recipe.label}", f"image {d.image}"]


def _as_text(rendered: RenderedPoint, blocks: list[Block]) -> str:
    from .render.shell import block_comment, format_block

    parts = [block_comment(b) + "\n" + format_block(b) for b in blocks]
    return "\n\n".join(parts) + "\n"


def _as_sh(rendered: RenderedPoint, blocks: list[Block]) -> str:
    from .render.shell import copy_all
    from .render.tables import tables

    return copy_all(blocks, _heading(rendered), tables().describe_placeholder)


def _as_slurm(rendered: RenderedPoint, blocks: list[Block]) -> str:
    from .render.slurm import sbatch_script
    from .render.tables import tables

    return sbatch_script(rendered.deployment, _heading(rendered), tables().describe_placeholder)


def _as_json(rendered: RenderedPoint, blocks: list[Block]) -> str:
    p, d = rendered.point, rendered.deployment
    doc = {
        "config": p.entry.key if p.entry else None,
        "point": p.point_id if p.entry else None,
        "label": p.label,
        "concurrencies": [p.conc] if p.conc is not None else [],
        "recipe": p.recipe.label,
        "model": d.model,
        "image": d.image,
        "gpus": d.gpus,
        "nodes": d.nodes,
        "cpu_nodes": d.cpu_nodes,
        "blocks": [b.to_json() for b in blocks],
        "settings": [s.to_json() for s in d.settings],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False, default=str) + "\n"


_FORMATS: dict[str, Callable[[RenderedPoint, list[Block]], str]] = {"text": _as_text, "json": _as_json, "sh": _as_sh, "slurm": _as_slurm}


def console() -> NoReturn:
    """The `cookbookgen` command: `main`, then its exit status without the interpreter's teardown.

    When `main` returns, a command has done all its work: files written and closed, worker processes
    joined, caches committed. What a normal exit adds is freeing the heap object by object and a last
    garbage collection: 50 to 70 ms after a diff of 1,000 configs, for nothing, since the process
    ends. So the output is flushed and the process exits at once (as mypy's fast exit does)."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:      # the reader went away (`| head`): as `main` takes it
        pass
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(code)


if __name__ == "__main__":
    console()
