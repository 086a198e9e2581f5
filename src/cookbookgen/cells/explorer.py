"""The AgentX explorer's block algebra that cells and the AgentX codec share (AGENTX_FORMAT.md): worker
argument order, re-targeting a KV tier (section 3.4), and block dicts -> `Block` with the explorer's
titles and "where" prose (section 3). No I/O.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from pydantic import ValidationError

from ..errors import CookbookError, key_join
from ..recipes.load import package_yaml
from ..render.model import Block
from ..render.shell import format_block
from ..render.tables import order_worker_args

DEFAULT_FILE = "agentx"
LINKER_FLAGS = (
    "--enable-unified-cache-external-linker", "--unified-cache-external-linker-backend",
    "--hicache-storage-backend-extra-config",
)
STORE_ONLY_ENV = (
    "MOONCAKE_MASTER", "MOONCAKE_TE_META_DATA_SERVER", "MOONCAKE_GLOBAL_SEGMENT_SIZE", "MOONCAKE_STANDALONE_STORAGE",
)
CACHE_ROLES = ("agg", "prefill")
NGINX_CMD = "nginx -c nginx.conf -g 'daemon off;'"
ROLE_HEAD: dict[str | None, str] = {"agg": "$AGG_HEAD_IP", "prefill": "$PREFILL_HEAD_IP", "decode": "$DECODE_HEAD_IP"}

Json = dict[str, Any]


def explorer_texts() -> Json:
    """`rules/explorer.yaml`: the explorer's block titles, "where" sentences and placeholder descriptions."""
    return cast(Json, package_yaml("rules/explorer.yaml"))


def sort_args(args: list[list[Any]]) -> list[list[Any]]:
    """Worker argument order (the renderer's, `render.tables.order_worker_args`) of block dict args."""
    return list(order_worker_args(args))


# ---- KV tiers (section 3.4) ----

def _is_kv_flag(name: str) -> bool:
    return name == "--enable-hierarchical-cache" or name.startswith("--hicache-") or name in LINKER_FLAGS


def _tier_settings(role: Any, target: str, cell: Json, module: Json, file: str) -> tuple[list[Any], Json]:
    """(args, env) the target tier adds to a worker of this role."""
    mooncake = module.get("kvMooncake") or {}
    if role in CACHE_ROLES and target == "hicache":
        hicache = (cell.get("kv") or {}).get("hicache")
        if not hicache:
            index = next((i for i, c in enumerate(module.get("cells", [])) if c is cell), None)
            where = key_join("cells", index) if index is not None else "cells[?]"
            raise CookbookError.at(file, 0, where + ".kv.hicache", "missing (needed for hicache)")
        return hicache["args"], {}
    if target != "mooncake":
        return [], {}
    if not mooncake:
        raise CookbookError.at(file, 0, "kvMooncake", "missing (needed for mooncake)")
    if role in CACHE_ROLES:
        return mooncake["args"], mooncake["env"]
    return [], mooncake["decode_env"]


def _kv_worker(block: Json, source: str, settings: tuple[list[Any], Json]) -> Json:
    """The worker moved from the `source` tier to the one whose (args, env) `settings` adds (its own env wins)."""
    add, env_add = settings
    args = [a for a in block["args"] if not _is_kv_flag(a[0])]
    env = block["env"]
    if source == "mooncake":
        env = {k: v for k, v in env.items() if k not in STORE_ONLY_ENV}
    names = {a[0] for a in args}
    args.extend(list(a) for a in add if a[0] not in names)
    return {**block, "args": sort_args(args), "env": dict(sorted({**env_add, **env}.items()))}


def _mooncake_master(module: Json, router: str, file: str) -> Json:
    master = ((module.get("kvMooncake") or {}).get("master") or {}).get(router)
    if master is None:
        raise CookbookError.at(file, 0, f"kvMooncake.master.{router}", "missing (needed for mooncake)")
    return copy.deepcopy(master)


def kv_transform(
    blocks: list[Json], measured_tier: str, target_tier: str, cell: Json, module: Json, router: str,
    file: str = DEFAULT_FILE,
) -> list[Json]:
    """Re-target the measured KV tier: strip its flags/blocks, add the target's (section 3.4)."""
    if measured_tier == target_tier:
        return blocks
    out: list[Json] = []
    for b0 in blocks:
        if measured_tier == "mooncake" and b0.get("kind") in ("mooncake-master", "mooncake-store"):
            continue
        b = {**b0, "args": [list(a) for a in b0.get("args") or []], "env": dict(b0.get("env") or {})}
        if b.get("kind") == "worker":
            settings = _tier_settings(b.get("role"), target_tier, cell, module, file)
            b = _kv_worker(b, measured_tier, settings)
        out.append(b)
    if target_tier == "mooncake":
        first = next((i for i, b in enumerate(out) if b.get("kind") == "worker"), -1)
        out.insert(first, _mooncake_master(module, router, file))  # -1 mirrors JS splice(-1, 0, x)
    return out


# ---- Block objects, titles and "where" prose (explorer section 3) ----

def _js_str(value: Any) -> str:
    """`String(v)` as JavaScript prints JSON scalars."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def block_title(block: Json) -> str:
    titles = explorer_texts()["titles"]
    if block.get("kind") == "worker":
        return str(titles["worker"].get(block.get("role"), "Worker"))
    return str(titles.get(block.get("kind"), block.get("kind")))


def _worker_where(b: Json, router: str, worker_count: int) -> str:
    n = b.get("nodes_per_worker") or 1
    role = b.get("role")
    parts: list[str] = []
    if (b.get("workers") or 0) > 1:
        span = f", each spanning {n} nodes" if n > 1 else ", one per node"
        parts.append(f"Start {b['workers']} {role} workers{span}.")
    if n > 1 and b.get("node_rank") is not None:
        parts.append(f"Run on node {b['node_rank'] + 1} of each worker (NODE_RANK={b['node_rank']}); {ROLE_HEAD.get(role)} is that worker's first node.")
    elif n > 1:
        parts.append(f"Run on every node of a worker with NODE_RANK=0..{n - 1}; {ROLE_HEAD.get(role)} is that worker's first node.")
    if b.get("gpu_pinning") is not None:
        per = [f"worker {i}: {' / '.join(str(x) for x in w if x) or 'all'}" for i, w in enumerate(b["gpu_pinning"])]
        parts.append(f"Workers share nodes: pin GPUs per worker with CUDA_VISIBLE_DEVICES = {' · '.join(per)}.")
    if router == "sglang" and worker_count == 1 and role == "agg" and n == 1:
        parts.append("Serves the OpenAI API on port 30000.")
    if router == "dynamo":
        parts.append("Workers register with Dynamo through etcd; start them after etcd/NATS.")
    return " ".join(parts) or f"Run on the {role} node."


def _store_where(b: Json) -> str:
    ports = b.get("ports") or []
    many = f", one instance per port ({', '.join(ports)}; change --port)" if len(ports) > 1 else ""
    return f"Start on each of the {b.get('count_nodes') or 1} decode node(s){many}."


def _frontend_where(b: Json) -> str:
    count = b.get("count") or 0
    head = (
        f"SA ran {count} frontends on separate nodes behind nginx (previous tab; port 8180 each, nginx on 8000). "
        "One frontend on port 8000 also works."
        if count > 1 else "Start once; clients connect to port 8000."
    )
    return head + " It finds the workers through etcd, so it can start before them."


def where_text(b: Json, router: str, worker_count: int) -> str:
    """The explorer's per-tab instruction of where and how often a block runs."""
    kind = b.get("kind")
    if kind == "worker":
        return _worker_where(b, router, worker_count)
    if kind == "mooncake-store":
        return _store_where(b)
    if kind == "dynamo-frontend":
        return _frontend_where(b)
    return str(explorer_texts()["where"].get(kind, ""))


def _block_fields(b: Json, router: str, worker_count: int) -> Json:
    """Block fields; a block's own `title`/`where` (cookbookgen's extra keys) win over the explorer's prose."""
    args = b.get("args") or []
    nginx = b.get("kind") == "nginx" and not args
    pinning, ports = b.get("gpu_pinning"), b.get("ports")
    return {
        "kind": b.get("kind"), "role": b.get("role"),
        "title": b["title"] if isinstance(b.get("title"), str) else block_title(b),
        "cmd": NGINX_CMD if nginx else b.get("cmd"),
        "args": tuple(tuple(_js_str(x) for x in a) for a in args),
        "env": {k: _js_str(v) for k, v in (b.get("env") or {}).items()},
        "preamble": tuple(b.get("preamble") or ()),
        "workers": b.get("workers"), "nodes_per_worker": b.get("nodes_per_worker"), "node_rank": b.get("node_rank"), "dp_rank": b.get("dp_rank"),
        "count": b.get("count"), "count_nodes": b.get("count_nodes"),
        "gpu_pinning": None if pinning is None else tuple(tuple(_js_str(x or "") for x in w) for w in pinning),
        "ports": None if ports is None else tuple(_js_str(p) for p in ports),
        "where": b["where"] if isinstance(b.get("where"), str) else where_text(b, router, worker_count),
    }


def to_block(b: Json, router: str, worker_count: int, files: list[Json], file: str, path: str) -> Block:
    """A `Block` from a decoded block dict; `files` named in its text are attached to it."""
    try:
        block = Block(**_block_fields(b, router, worker_count))
    except ValidationError as exc:
        raise CookbookError.at(file, 0, path, f"bad decoded block: {exc.errors()[0]['msg']}") from None
    text = block_text(block)
    used = {f["name"]: f["content"] for f in files if f["name"] in text}
    return block.model_copy(update={"files": used}) if used else block


def to_blocks(dicts: list[Json], router: str, files: list[Json], file: str, path: str) -> list[Block]:
    """The `Block`s of one deployment's decoded dicts (`to_block`); `path` + `[i]` names a bad one."""
    workers = sum(d.get("workers") or 1 for d in dicts if d.get("kind") == "worker" and not d.get("node_rank") and not d.get("dp_rank"))
    return [to_block(d, router, workers, files, file, key_join(path, i)) for i, d in enumerate(dicts)]


def block_text(block: Block) -> str:
    """The text the explorer shows (and copies) for one process."""
    return format_block(block, with_files=False)
