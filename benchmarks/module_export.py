"""Time `cookbookgen export --from-module` on an N-cell AgentX module (issue 17: it was quadratic).

The module repeats the cells of the public deepseek-v4 module (tests/data/corpus), each copy's `ref`s
pointing into its own copy and each full worker block tagged with the copy's number, so blocks
differ between copies as in a real cookbook. `--points 1` keeps one point a cell (lighter cells).

    python benchmarks/module_export.py 1000 8000 100000 [--points 1]
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cookbookgen.agentx.module import read_header_lines, read_module_text, write_module_text

CORPUS_MODULE = Path(__file__).resolve().parents[1] / "tests/data/corpus/sglang-cookbook/agentx/deepseek-ai/deepseek-v4.jsx"


def _copy_cell(cell: dict[str, Any], copy_no: int, first: int, points: int | None) -> dict[str, Any]:
    out = copy.deepcopy(cell)
    out["id"] = f"{cell['id']}~{copy_no}"
    if points:
        out["points"] = [{k: v for k, v in p.items() if k != "patch"} for p in out["points"][:points]]
    for spec in out["routers"].values():
        for block in spec["blocks"]:
            if "ref" in block:
                block["ref"][0] += first
            elif "from" not in block and block.get("kind") == "worker" and isinstance(block.get("args"), list):
                block["args"].append(["--bench-tag", f"g{copy_no}"])
    return out


def module_text(cells: int, points: int | None) -> str:
    text = CORPUS_MODULE.read_text(encoding="utf-8")
    base = read_module_text(text, str(CORPUS_MODULE))
    k = len(base["cells"])
    module = {key: value for key, value in base.items() if key != "cells"}
    module["cells"] = [_copy_cell(base["cells"][i % k], i // k, i // k * k, points) for i in range(cells)]
    return write_module_text(module, read_header_lines(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cells", type=int, nargs="+")
    parser.add_argument("--points", type=int, help="keep this many points a cell")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.cells:
            module = Path(tmp) / f"m{n}.jsx"
            module.write_text(module_text(n, args.points), encoding="utf-8")
            start = time.perf_counter()
            run = subprocess.run([sys.executable, "-m", "cookbookgen.cli", "export", "--from-module", str(module),
                                  "--out", str(Path(tmp) / "out.jsx")], capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - start
            result = "exported" if run.returncode == 0 else run.stderr.strip().splitlines()[-1]
            print(f"{n} cells ({module.stat().st_size} bytes): {seconds:.1f} s, exit {run.returncode}: {result}")


if __name__ == "__main__":
    main()
