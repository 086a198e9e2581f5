"""`cookbookgen list`: what there is to render or show.

- `list [--source ROOT]`: every config of an InferenceX checkout (default: the bundled example) and
  its points: the label (`c16`, only when no other point of the config has it: what `render --point`
  accepts), the full id (`tp2-ep2/c16`), the topology, the recipe file and its selector.
- `list --cookbook M|MODULE`: the cells of a cookbook manifest (rendered) or of an AgentX module
  (`.jsx`/`.json`): id, model, hardware, topology and point labels (what `show --cell/--point` accept).

`--format text` prints aligned columns for people; `--format json` prints, with stable keys,
`{"source", "configs": [{"key", "model", "framework", "problem", "points": [{"label", "id", "topology",
"concurrency", "recipe", "selector", "problem"}]}]}` or `{"cookbook", "cells": [{"id", "model", "hardware",
"topology", "points": [label, ...]}]}`. A label another point of the config shares is null; a
recipe that cannot be found is listed as the master config names it, with the problem (null when none).
A config that cannot be read (its rows, its framework) is listed with its located problem and no
points; the others are listed all the same. Exit status 0 when everything could be reported;
with `--strict`, 1 when any config or point has a problem (for CI).
I/O: reads the checkout, manifest or module; prints to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CookbookError
from ..project import EXAMPLE_SOURCE, bundled, shown_default
from ..text import one_line

if TYPE_CHECKING:  # the load stage is imported by the handler
    from ..recipes.master import ConfigEntry, Row
    from ..recipes.workspace import Workspace

Json = dict[str, Any]
MODULE_SUFFIXES = (".jsx", ".json")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("list", help="list the configs and points of a checkout, or the cells of a cookbook or module",
                              description="List what can be rendered (configs and their points) or shown (cells of a cookbook "
                                          "manifest or an AgentX module).")
    p.add_argument("--source", type=Path, metavar="ROOT", help=f"InferenceX checkout; default: {shown_default(EXAMPLE_SOURCE)}")
    p.add_argument("--cookbook", type=Path, metavar="COOKBOOK",
                   help="list the cells of this cookbook instead: a manifest (.yaml), a built site folder or an AgentX module (.jsx or .json)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="text: aligned columns; json: stable keys for scripts")
    p.add_argument("--strict", action="store_true", help="exit 1 when any config or point of the checkout is refused (for CI)")
    p.add_argument("--recipes", type=Path, metavar="DIR", help="with --source: an srt-slurm git repository; multi-node rows' "
                                                                "CONFIG_FILE recipes are read from the checkout their runner makes of it")
    p.set_defaults(run=run_list)


def run_list(args: argparse.Namespace) -> int:
    if args.cookbook is not None:
        path: Path = args.cookbook
        cells = module_cells(path) if path.suffix in MODULE_SUFFIXES else manifest_cells(path)
        doc: Json = {"cookbook": str(path), "cells": cells}
        text = _table(["ID", "MODEL", "HARDWARE", "TOPOLOGY", "POINTS"],
                      [[c["id"], c["model"], c["hardware"], c["topology"], " ".join(c["points"])] for c in cells])
    else:
        root = args.source or bundled(EXAMPLE_SOURCE)
        configs, notes = checkout_configs(root, args.recipes)
        doc = {"source": str(root), "configs": configs, "notes": notes}
        text = "\n\n".join(_config_text(c) for c in doc["configs"])
        for note in notes:      # never silent: a duplicate key's shadowed value, with both lines (also in the JSON)
            sys.stderr.write(f"cookbookgen: note: {note}\n")
    print(json.dumps(doc, indent=1, ensure_ascii=False) if args.format == "json" else text)
    refused = [c for c in doc.get("configs", []) if c["problem"] or any(p["problem"] for p in c["points"])]
    return 1 if refused and getattr(args, "strict", False) else 0


def checkout_configs(root: Path, recipes: Path | None = None) -> tuple[list[Json], list[str]]:
    """Every config of the checkout, its points in master-config order (`recipes`: see `Workspace`); and the
    notes on the files read for them (each recipe file a point names is read: a duplicate key's note names
    both lines)."""
    from ..recipes.workspace import Workspace

    from ..recipes.master import check_framework

    ws = Workspace(root, recipes)
    configs: list[Json] = []
    for key, entry in ws.entries().items():
        try:
            check_framework(entry)
            rows = entry.rows
        except CookbookError as exc:
            configs.append({"key": key, "model": entry.model, "framework": entry.framework, "problem": str(exc.problems[0]), "points": []})
            continue
        labels = Counter(f"c{c}" for row in rows for c in row.concs)
        points = [{"label": f"c{c}" if labels[f"c{c}"] == 1 else None, "id": f"{row.slug}/c{c}", "topology": row.slug,
                   "concurrency": c, **_recipe(ws, entry, row, c)} for row in rows for c in row.concs]
        configs.append({"key": key, "model": entry.model, "framework": entry.framework, "problem": None, "points": points})
    return configs, ws.findings()


def _recipe(ws: Workspace, entry: ConfigEntry, row: Row, conc: int) -> Json:
    """The point's recipe file (checkout-relative) and selector; when they cannot be found, the
    reference as the master config writes it and the problem (a listing shows what there is)."""
    try:
        path = ws.recipe_path(entry, row)
        if path.suffix != ".sh":
            ws.document(path)       # read, so that what it says twice is noted
        return {"recipe": ws.shown(path), "selector": ws.selector(entry, row, conc), "problem": None}
    except CookbookError as exc:
        return {"recipe": row.recipe.path, "selector": row.recipe.selector, "problem": str(exc.problems[0])}


def manifest_cells(path: Path) -> list[Json]:
    """The cells of a manifest, or of a site folder `cookbookgen build` wrote (as `diff` and `flags` take it)."""
    from ..cells.assemble import load_cookbook

    if path.is_dir():
        return site_cells(path)
    cookbook = load_cookbook(path)
    return [{"id": c.id, "model": c.model, "hardware": c.hw, "topology": c.label, "points": [p.label for p in c.points]}
            for page in cookbook.pages for c in page.cells]


def site_cells(path: Path) -> list[Json]:
    """The cells of a built site, as `diff` reads it (its pages name each cell and its points, not its
    model, hardware or topology: those show as `-`)."""
    from ..diff.sources import read_site

    cells: dict[str, Json] = {}
    for p in read_site(path).points:
        cell = cells.setdefault(p.cell, {"id": p.cell, "model": "-", "hardware": "-", "topology": "-", "points": []})
        cell["points"] += [f"c{c}" for c in p.concs if f"c{c}" not in cell["points"]]
    return list(cells.values())


def module_cells(path: Path) -> list[Json]:
    from ..agentx.decode import Decoder, point_label
    from ..agentx.module import read_module_text
    from .agentx import read_text

    module = read_module_text(read_text(path), str(path))
    decoder = Decoder(module, str(path))
    with decoder.guard("cells"):
        return [{"id": str(c["id"]), "model": str(c.get("ckpt", "")), "hardware": str(c.get("hw", "")),
                 "topology": str(c.get("label", "")), "points": [point_label(p) for p in c.get("points") or []]}
                for c in module["cells"]]


def _config_text(config: Json) -> str:
    head = f"{config['key']}: {config['model'] or 'model not named'}, {config['framework']}, {len(config['points'])} point(s)"
    if config["problem"]:
        return one_line(f"{head}: refused: {config['problem']}")
    rows = [[p["label"] or "-", p["id"], p["topology"], p["recipe"] + (f":{p['selector']}" if p["selector"] else "")
             + (f"  ({p['problem']})" if p["problem"] else "")] for p in config["points"]]
    return one_line(head) + "\n" + _table(["POINT", "ID", "TOPOLOGY", "RECIPE"], rows, indent="  ")


def _table(head: list[str], rows: list[list[str]], indent: str = "") -> str:
    """Columns padded to their widest cell; every cell on one line."""
    cells = [head] + [[one_line(str(v)) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    return "\n".join(indent + "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells)
