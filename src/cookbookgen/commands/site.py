"""`cookbookgen build` and `cookbookgen serve`: argument parsing and reporting for `publish.site`.

Reads the clock (today, the default generated-on date) and prints; nothing else here does I/O.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CookbookError
from ..project import EXAMPLE_MANIFEST, bundled, shown_default

if TYPE_CHECKING:  # MkDocs and the render stack load only when a handler runs
    from ..publish.site import Dates


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def _port(text: str) -> int:
    port = int(text) if text.strip().isdigit() else -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 1 to 65535, got {text!r}")
    return port


def _host(text: str) -> str:
    """An IP address (IPv6 with or without brackets) or `localhost`, as MkDocs' server takes it."""
    import ipaddress

    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if bare == "localhost":
        return bare
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an IP address or localhost, got {text!r}") from None


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    b = subparsers.add_parser("build", help="build the static cookbook site (MkDocs, strict)",
                              description="Render every point of the cookbook manifest and build the site with MkDocs --strict. "
                                          "The site is built in a temporary folder and moved into --out only when the build succeeded.")
    b.add_argument("--cookbook", type=Path, metavar="COOKBOOK", help=f"cookbook manifest; default: {shown_default(EXAMPLE_MANIFEST)}")
    b.add_argument("--source", type=Path, metavar="ROOT",
                   help="build every config of this InferenceX checkout, without a manifest: provenance from its perf-changelog, "
                        "each config or point that cannot be rendered listed on the home page")
    b.add_argument("--strict", action="store_true", help="with --source: exit 1 when any config or point is refused (for CI)")
    b.add_argument("--recipes", type=Path, metavar="DIR", help="with --source: an srt-slurm git repository; multi-node rows' "
                                                                "CONFIG_FILE recipes are read from the checkout their runner makes of it")
    b.add_argument("--out", type=Path, default=Path("site"), help="output folder, replaced atomically when it is new, empty or a site cookbookgen built "
                                                                     "(refused if it holds other files); default: site")
    b.add_argument("--date", type=_date, help="generated-on date YYYY-MM-DD (reproducible builds); default: the manifest's generated_on, else today")
    b.add_argument("--cache", type=Path, metavar="DIR",
                   help="content-hash cache (a new or empty folder, or a cache cookbookgen made): unchanged configs are not "
                        "rendered again and MkDocs rebuilds only changed pages; default: .cookbookgen-cache beside --out")
    b.add_argument("--no-cache", action="store_true", help="build everything from scratch and keep no cache")
    b.add_argument("--keep-docs", type=Path, metavar="DIR",
                   help="also leave the generated Markdown in DIR/docs with a DIR/mkdocs.yml for a plain `mkdocs build` "
                        "(replacing only docs an earlier build kept there)")
    b.set_defaults(run=run_build)
    s = subparsers.add_parser("serve", help="serve a live preview of the cookbook site",
                              description="Generate the site's pages and serve them with live reload; edits to the manifest, recipes or templates regenerate them.")
    s.add_argument("--cookbook", type=Path, metavar="COOKBOOK", help=f"cookbook manifest; default: {shown_default(EXAMPLE_MANIFEST)}")
    s.add_argument("--host", type=_host, default="127.0.0.1", help="IP address (or localhost) to listen on; default: 127.0.0.1")
    s.add_argument("--port", type=_port, default=8000, help="port 1 to 65535; default: 8000")
    s.add_argument("--date", type=_date, help="generated-on date YYYY-MM-DD; default: the manifest's generated_on, else today")
    s.set_defaults(run=run_serve)


def _dates(args: argparse.Namespace) -> Dates:
    from ..cells.assemble import today
    from ..publish.site import Dates

    return Dates(date=getattr(args, "date", None), fallback=today())


def _manifest(args: argparse.Namespace) -> Path:
    """The manifest, or with --source the checkout's folder (a whole-checkout build)."""
    source = getattr(args, "source", None)
    if source is not None:
        if args.cookbook is not None:
            raise CookbookError.usage("--source", "give --cookbook (a manifest) or --source (a whole checkout), not both")
        if not source.is_dir():
            raise CookbookError.at(str(source), 0, "--source", "checkout not found")
        return Path(source)
    path: Path = args.cookbook or bundled(EXAMPLE_MANIFEST)
    if not path.is_file():
        raise CookbookError.at(str(path), 0, "--cookbook", "cookbook manifest not found")
    return path


def _recipes(args: argparse.Namespace) -> Path | None:
    recipes = getattr(args, "recipes", None)
    if recipes is not None and getattr(args, "source", None) is None:
        raise CookbookError.usage("--recipes", "only with --source: a manifest's configs name their recipes in its checkout")
    return Path(recipes) if recipes is not None else None


def run_build(args: argparse.Namespace) -> int:
    from ..publish.site import build_site, stop_on_signals

    cache = None if getattr(args, "no_cache", False) else (getattr(args, "cache", None) or args.out.absolute().parent / ".cookbookgen-cache")
    with stop_on_signals():
        result = build_site(_manifest(args), args.out, _dates(args), cache=cache, keep_docs=getattr(args, "keep_docs", None),
                            recipes=_recipes(args))
    how = "" if result.rebuilt is None else f"; incremental: MkDocs processed {result.rebuilt} changed file(s)"
    print(f"built {result.pages} model page(s), {result.scripts} launch scripts ({result.files} files) "
          f"into {result.out} in {result.seconds:.1f} s{how}", file=sys.stderr)
    if result.refused:
        print(f"{len(result.refused)} config(s) or point(s) not published (listed on the home page):", file=sys.stderr)
        for line in result.refused:
            print(f"  {line}", file=sys.stderr)
    return 1 if result.refused and getattr(args, "strict", False) else 0


def run_serve(args: argparse.Namespace) -> int:
    from ..publish.site import serve_site, stop_on_signals

    with stop_on_signals():
        serve_site(_manifest(args), args.host, args.port, _dates(args), report=lambda line: print(line, file=sys.stderr))
    return 0
