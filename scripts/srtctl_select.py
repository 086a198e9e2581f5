"""Choose srt-slurm recipe variants so that every engine, layout and feature of the tree appears.

    python scripts/srtctl_select.py --checkout <srt-slurm checkout> --count 300 > variants.txt

Each variant (plain file, `override_*`, `zip_override_*[i]`, `sweep[i]`) is described by its features,
read from the YAML alone: engine, frontend type, aggregated or disaggregated, how it is selected
(plain, override, zip override, sweep), co-located decode (`decode_nodes: 0`), nginx (several frontends
on more than one node), multi-node workers, partial-node workers, KV events, profiling, a dedicated
etcd/NATS node. First one variant of every distinct feature set is taken, then every feature value
still rare gets more (up to RARE variants), then the other variants of the files already taken (a recipe file read once
serves many variants), then other files in order, until `--count`. The output lists `RECIPE[:SELECTOR]`, one a line, relative to the checkout.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = _merge(base.get(key), value) if value is not None else None
        return {k: v for k, v in out.items() if v is not None}
    return over


def variants(path: Path) -> list[tuple[str | None, dict[str, Any]]]:
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        return []
    if "base" in raw:
        out: list[tuple[str | None, dict[str, Any]]] = [(k, _merge(raw["base"], raw[k] or {})) for k in raw if k.startswith("override_")]
        for key in (k for k in raw if k.startswith("zip_override_")):
            n = max([len(v) for v in _lists(raw[key])] or [1])
            out += [(f"{key}[{i}]", _merge(raw["base"], _slice(raw[key], i))) for i in range(n)]
        return out
    if isinstance(raw.get("sweep"), dict):
        n = 1
        for values in raw["sweep"].values():
            n *= len(values)
        return [(f"sweep[{i}]", raw) for i in range(n)]
    return [(None, raw)]


def _lists(node: Any) -> list[list[Any]]:
    if isinstance(node, dict):
        return [x for v in node.values() for x in _lists(v)]
    return [node] if isinstance(node, list) else []


def _slice(node: Any, i: int) -> Any:
    if isinstance(node, dict):
        return {k: _slice(v, i) for k, v in node.items()}
    if isinstance(node, list):
        return node[0 if len(node) == 1 else i]
    return node


def features(selector: str | None, config: dict[str, Any]) -> dict[str, str]:
    res = config.get("resources") or {}
    backend = config.get("backend") or {}
    frontend = config.get("frontend") or {}
    gpn = res.get("gpus_per_node", 4) if isinstance(res.get("gpus_per_node", 4), int) else 4
    disagg = res.get("prefill_nodes") is not None or res.get("decode_nodes") is not None
    sizes = []
    for mode in (("prefill", "decode") if disagg else ("agg",)):
        nodes, workers, explicit = res.get(f"{mode}_nodes"), res.get(f"{mode}_workers"), res.get(f"gpus_per_{mode}")
        if isinstance(explicit, int):
            sizes.append(explicit)
        elif isinstance(nodes, int) and isinstance(workers, int) and nodes and workers:
            sizes.append(nodes * gpn // workers)
        else:
            sizes.append(gpn)
    total = (res.get("prefill_nodes") or 0) + (res.get("decode_nodes") or 0) if disagg else (res.get("agg_nodes") or 1)
    how = "plain" if selector is None else selector.split("_")[0] if not selector.startswith("zip") else "zip"
    return {
        "engine": str(backend.get("type", "sglang")),
        "frontend": str(frontend.get("type", "dynamo")),
        "layout": "disagg" if disagg else "agg",
        "variant": "sweep" if selector and selector.startswith("sweep") else how,
        "colocated": str(disagg and res.get("decode_nodes") == 0),
        "nginx": str(frontend.get("enable_multiple_frontends", True) and total > 1),
        "multi_node": str(any(s > gpn for s in sizes)),
        "partial_node": str(any(s < gpn for s in sizes)),
        "kv_events": str(bool(backend.get("kv_events_config"))),
        "profiling": str(bool((config.get("profiling") or {}).get("type"))),
        "dedicated_infra": str(bool((config.get("infra") or {}).get("etcd_nats_dedicated_node"))),
    }


RARE = 30


def choose(checkout: Path, count: int) -> list[str]:
    entries = []
    for path in sorted((checkout / "recipes").rglob("*.yaml")):
        rel = str(path.relative_to(checkout))
        for selector, config in variants(path):
            entries.append((rel + (f":{selector}" if selector else ""), rel, features(selector, config)))
    chosen: dict[str, None] = {}
    seen: set[tuple[tuple[str, str], ...]] = set()
    for ref, _, feats in entries:                     # one of every distinct feature set
        key = tuple(sorted(feats.items()))
        if key not in seen:
            seen.add(key)
            chosen[ref] = None
    values = Counter(item for _, _, feats in entries if _ in chosen for item in feats.items())
    for ref, _, feats in entries:                     # rare feature values: up to RARE variants each
        if len(chosen) >= count:
            break
        if ref not in chosen and any(values[item] < RARE for item in feats.items()):
            chosen[ref] = None
            values.update(feats.items())
    files = {file for ref, file, _ in entries if ref in chosen}
    for ref, file, _ in entries:                      # the rest: more variants of the files already read first
        if len(chosen) >= count:
            break
        if ref not in chosen and file in files:
            chosen[ref] = None
    for ref, file, _ in entries:                      # then other files
        if len(chosen) >= count:
            break
        chosen.setdefault(ref, None)
    return list(chosen)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", required=True, type=Path)
    parser.add_argument("--count", type=int, default=300)
    args = parser.parse_args(argv)
    sys.stdout.write("".join(ref + "\n" for ref in choose(args.checkout, args.count)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
