"""`cookbookgen export` and `cookbookgen show`: write and read SGLang cookbook AgentX data modules.

- `export [--cookbook M | --from-module MODULE] --format agentx|json --out FILE`: the cookbook (or a
  published module, re-encoded) as a compact module; written atomically (`files.write_atomic`, mode
  as the umask gives), and only after the encoder has checked that every point decodes back. An
  `--out` that is a folder or ends with `/` gets `agentx/<org>/<model>.jsx` (or `.json`) inside it.
- `show MODULE [--cell ID] [--point cN] [--router dynamo|sglang] [--kv none|hicache|mooncake]
  [--format text|json]`: every selected (cell, point, router, KV tier) decoded. JSON is a list of
  `{"cell", "point", "router", "kv", "status", "blocks", "copy_all"}`; blocks as `render --format json`,
  `copy_all` the bash-valid whole-deployment script.
I/O: reads the manifest/module, writes `--out`, prints to stdout. Bad input raises `CookbookError`.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Iterator

from ..cells import ROUTERS, TIERS
from ..errors import CookbookError
from ..files import write_atomic
from ..project import EXAMPLE_MANIFEST, bundled, shown_default
from ..text import unknown

# The encoder, decoder and render stack are imported by the handlers, so other commands start fast.
Json = dict[str, Any]


def register(subparsers: Any) -> None:
    """Add `export` and `show` to the CLI's subparsers."""
    e = subparsers.add_parser("export", help="write the cookbook as an SGLang cookbook AgentX data module",
                              description="Encode the cookbook (or re-encode a published module) compactly; "
                                          "nothing is written unless every point decodes back exactly.")
    e.add_argument("--cookbook", type=Path, metavar="COOKBOOK", help=f"cookbook manifest; default: {shown_default(EXAMPLE_MANIFEST)}")
    e.add_argument("--config", dest="configs", action="append", metavar="KEY",
                   help="export only this config of the cookbook (repeatable); the AgentX format holds SGLang configs only")
    e.add_argument("--from-module", type=Path, metavar="MODULE", help="re-encode this published module (.jsx or .json) instead")
    e.add_argument("--format", choices=["agentx", "json"], default="agentx", help="agentx: the JSX module; json: the same data as JSON")
    e.add_argument("--out", required=True, metavar="FILE|DIR/",
                   help="output file; or a folder (one that exists, or any path ending with /): agentx/<org>/<model>.jsx inside it, "
                        "agentx/<its name> with --from-module (.json with --format json)")
    e.set_defaults(run=run_export)
    s = subparsers.add_parser("show", help="decode an AgentX data module into launch commands",
                              description="Decode every selected (cell, point, router, KV tier) of an AgentX module.")
    s.add_argument("module", type=Path, help="AgentX module (.jsx) or its JSON")
    s.add_argument("--cell", metavar="ID", help="cell id, e.g. dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg#0")
    s.add_argument("--point", metavar="POINT", help="point label c<first concurrency>, e.g. c16")
    s.add_argument("--router", choices=ROUTERS, help="show the cell behind this router (default: the one it was measured with)")
    s.add_argument("--kv", choices=TIERS, help="show the cell with this KV-cache tier (default: the one it was measured with)")
    s.add_argument("--format", choices=["text", "json"], default="text", help="text: commands as a reader copies them; json: blocks and the script")
    s.set_defaults(run=run_show)


# ---- files ----

def read_text(path: Path) -> str:
    from ..recipes.load import MAX_INPUT_BYTES, read_text_file

    return read_text_file(path, str(path), MAX_INPUT_BYTES)


# ---- export ----

def _out_path(args: argparse.Namespace, default_name: str) -> Path:
    """`--out` as given, or, when it names a folder (it exists as one, or ends with `/`), the module's
    default name inside it."""
    given = str(args.out)
    out = Path(given)
    if not (given.endswith(("/", os.sep)) or out.is_dir()):
        return out
    if out.exists() and not out.is_dir():
        raise CookbookError.usage("--out", f"{given!r} names a folder, but {out} is a file")
    name = default_name if args.format == "agentx" else str(Path(default_name).with_suffix(".json"))
    return out / name


def run_export(args: argparse.Namespace) -> int:
    from ..agentx.encode import encode, expanded_size, header_lines, module_path, reencode
    from ..agentx.module import read_header_lines, read_module_text, write_module_text
    from ..cells.assemble import load_cookbook
    from ..cells.manifest import read_manifest

    if args.from_module:
        source = read_text(args.from_module)
        original = read_module_text(source, str(args.from_module))
        module = reencode(original, str(args.from_module))
        header, trailing = read_header_lines(source), source.endswith("\n")
        out = _out_path(args, f"agentx/{args.from_module.name}")
        baseline, what = len(source.encode("utf-8")), "the original module"
    else:
        manifest = args.cookbook or bundled(EXAMPLE_MANIFEST)
        keys = [config.key for page in read_manifest(manifest)[0].pages for config in page.configs]
        for key in args.configs or ():
            if key not in keys:
                raise CookbookError.usage("--config", unknown("config of the cookbook", key, keys))
        cookbook = load_cookbook(manifest, only=args.configs)
        out = _out_path(args, module_path(cookbook))
        module = encode(cookbook, str(out))
        header, trailing = header_lines(cookbook), True
        baseline, what = 0, "the fully expanded commands"
    text = write_module_text(module, header, trailing) if args.format == "agentx" else json.dumps(module, indent=1, ensure_ascii=False) + "\n"
    write_atomic(out, text, durable=True)
    size = len(text.encode("utf-8"))
    expanded = expanded_size(module, str(out))
    print(f"wrote {out}: {size} bytes, {len(module['cells'])} cells; "
          f"the fully expanded commands are {expanded} bytes ({expanded / size:.1f}x larger)")
    if baseline:
        print(f"{what}: {baseline} bytes; re-encoded/original = {size / baseline:.3f}")
    return 0


# ---- show ----

def _selected(module: Json, args: argparse.Namespace, file: str) -> Iterator[tuple[int, int, str, str]]:
    from ..agentx.decode import kv_tiers, point_label, routers_of

    cells = module["cells"]
    ids = [str(c.get("id")) for c in cells]      # unique strings (`agentx.module.check_cell_ids`)
    if args.cell and args.cell not in ids:
        raise CookbookError.at(file, 0, "--cell", unknown("cell", args.cell, ids))
    if args.point:
        labels = [point_label(p) for c in cells if not args.cell or c.get("id") == args.cell for p in c.get("points") or []]
        if args.point not in labels:
            raise CookbookError.at(file, 0, "--point", unknown("point", args.point, labels))
    for ci, cell in enumerate(cells):
        if args.cell and cell.get("id") != args.cell:
            continue
        for pi, point in enumerate(cell.get("points") or []):
            if args.point and point_label(point) != args.point:
                continue
            for router in routers_of(cell):
                for kv in kv_tiers(cell, point):
                    if (not args.router or router == args.router) and (not args.kv or kv == args.kv):
                        yield ci, pi, router, kv


def show_combinations(module: Json, args: argparse.Namespace, file: str) -> list[Json]:
    """The selected combinations, decoded: the `show --format json` list."""
    from ..agentx.decode import Decoder, copy_all_runnable, point_label, status_of

    dec = Decoder(module, file)
    out = []
    with dec.guard("cells"):
        selected = list(_selected(module, args, file))
    for ci, pi, router, kv in selected:
        with dec.guard(f"cells[{ci}].points[{pi}]"):
            cell, point = module["cells"][ci], module["cells"][ci]["points"][pi]
            blocks = dec.decode_point(ci, pi, router, kv)
            out.append({"cell": cell["id"], "point": point_label(point), "router": router, "kv": kv,
                        "status": status_of(cell, point, router, kv), "blocks": [b.to_json() for b in blocks],
                        "copy_all": copy_all_runnable(blocks, dec.router_files(ci, router)), "_blocks": blocks})
    if not out:
        chosen = " ".join(f"--{k} {v}" for k, v in vars(args).items() if k in ("cell", "point", "router", "kv") and v)
        raise CookbookError.at(file, 0, "--point" if args.point else "--cell", f"no combination matches {chosen or 'the module'}")
    return out


def _text(combo: Json) -> str:
    from ..render.shell import block_comment, comment_line, format_block

    head = comment_line(f"== {combo['cell']} {combo['point']} router={combo['router']} kv={combo['kv']} [{combo['status']}] ==")
    parts = [block_comment(b) + "\n" + format_block(b) for b in combo["_blocks"]]
    return head + "\n\n" + "\n\n".join(parts) + "\n"


def run_show(args: argparse.Namespace) -> int:
    from ..agentx.module import read_module_text

    file = str(args.module)
    module = read_module_text(read_text(args.module), file)
    combos = show_combinations(module, args, file)
    if args.format == "json":
        print(json.dumps([{k: v for k, v in c.items() if k != "_blocks"} for c in combos], indent=1, ensure_ascii=False))
    else:
        print("\n".join(_text(c) for c in combos), end="")
    return 0
