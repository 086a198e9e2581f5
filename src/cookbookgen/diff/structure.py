"""Stage 4 of the diff (compare): once-per-point checks of a published point's shape against its recipe, and the block lookups the
leaf comparison shares. No I/O.

- Blocks: one worker block (or more, per co-located slot) per recipe role, the frontend the recipe's
  `frontend.type` starts, one block per declared service, and the implied ones of `synthesized.yaml`
  (etcd for Dynamo, nginx for several frontends); anything else must be explained or is extra.
- Topology per role: worker count, nodes per worker, node count, GPU pinning, against
  `expect.RoleTopology`; co-located workers need their own port for every port setting (`port_settings` of synthesized.yaml).
- Frontend count, worker command, model id, request plane, KV events and the image.
- Settings a point cannot run without (`required` in synthesized.yaml: a multi-node SGLang worker's
  `--nnodes`, a router's worker URLs, ...): a block that leaves one out is a mismatch.
"""

from __future__ import annotations

import shlex

import math
import re
from typing import Any, Iterable, Mapping

from ..render.model import Block
from ..render.values import args_from_words, flag as as_flag, word
from .context import Ctx
from .expect import PointExpect, RoleTopology, store_of
from .explain import Explanation, explain_block, missing, required_settings
from .model import DIFFERENT, EXTRA, MISSING, Finding
from .tables import table
from .words import flag_key, recipe_words

RawYaml = Any
FRONTEND_KINDS = ("dynamo-frontend", "sglang-router", "vllm-router", "smg", "atomesh")
KIND_LABEL = {"dynamo-frontend": "frontend", "sglang-router": "router", "vllm-router": "router", "smg": "router", "atomesh": "router"}


# --- lookups shared with compare.py -----------------------------------------------------------------

def service_args(value: RawYaml) -> list[tuple[str, ...]]:
    """A service's `args` (argv list or flag mapping) as `(flag, *values)` tuples."""
    if isinstance(value, list):
        return args_from_words(value)
    if isinstance(value, dict):
        return [(as_flag(k), *words) for k, v in value.items() if (words := recipe_words(v)) is not None]
    return []


def _service(data: dict[str, RawYaml], index: int) -> dict[str, RawYaml]:
    services = data.get("services") or []
    return services[index] if 0 <= index < len(services) and isinstance(services[index], dict) else {}


def service_kind(data: dict[str, RawYaml], index: int) -> str:
    return str(_service(data, index).get("type", "service"))


def _port_of(svc: dict[str, RawYaml]) -> str | None:
    return next((a[1] for a in service_args(svc.get("args")) if a[0] == "--port" and len(a) > 1), None)


def service_blocks(data: dict[str, RawYaml], index: int, blocks: Iterable[Block]) -> list[Block]:
    """The published blocks of `services[index]`; a Mooncake store by its port when several exist."""
    svc = _service(data, index)
    same = [b for b in blocks if b.kind == svc.get("type")]
    port = _port_of(svc) if svc.get("type") == "mooncake-store" else None
    by_port = [b for b in same if port is not None and (port,) in service_arg_values(b, "--port")]
    return by_port or same


def service_arg_values(block: Block, flag: str) -> list[tuple[str, ...]]:
    key = flag_key(flag, False)
    got = [tuple(a[1:]) for a in block.args if flag_key(a[0], False) == key]
    if key == "--port" and block.ports:
        got += [(p,) for p in block.ports]
    return got


def lines_of(value: RawYaml) -> tuple[str, ...]:
    items = value.splitlines() if isinstance(value, str) else [word(v) for v in value or []]
    return tuple(line.strip() for line in items if line.strip())


def covered(data: dict[str, RawYaml], block: Block, blocks: tuple[Block, ...]) -> tuple[set[str], set[str]]:
    """Arg keys and env names of `block` that recipe leaves already compare."""
    store = store_of(data) or {}
    if block.kind == "worker":
        spec = (data.get("roles") or {}).get(block.role) or {}
        return {flag_key(k, True) for k in spec.get("args") or {}}, set(spec.get("env") or {}) | set(store.get("env") or {})
    if block.kind == "mooncake-master" and store:
        return {flag_key(a[0], False) for a in service_args(store.get("master_extra_args"))}, set()
    if block.kind in FRONTEND_KINDS:
        fe = data.get("frontend") or {}
        return {flag_key(as_flag(k), False) for k in fe.get("args") or {}}, set(fe.get("env") or {})
    args: set[str] = set()
    env: set[str] = set()
    for i, svc in enumerate(data.get("services") or []):
        if any(b is block for b in service_blocks(data, i, blocks)):
            args |= {flag_key(a[0], False) for a in service_args(svc.get("args"))}
            env |= set(svc.get("env") or {})
    return args, env


def file_setting(expect: PointExpect, path: tuple[Any, ...], value: RawYaml, blocks: tuple[Block, ...]) -> tuple[str, str, str]:
    """(class, detail, role) of a setting the cookbook shows in a config file (nginx.conf, nats.conf)."""
    key = str(path[-1])
    if key in table()["nats"]:
        text = table()["nats"][key].format(bytes=int(value) * 1024 * 1024)
        return _in_file([b for b in blocks if b.kind == "nats"], "nats.conf", text, True, "nats")
    if not expect.nginx:
        return "unverified", "applies only behind nginx; the point runs no nginx", "nginx"
    if key not in table()["nginx"]:        # e.g. frontend.nginx_container: not a line of nginx.conf
        return "mismatch", f"no check compares {key} with the cookbook (add it to diff/synthesized.yaml or a policy rule)", "nginx"
    pattern = table()["nginx"][key]
    if isinstance(pattern, dict):
        present = bool(value)
        text = pattern["true"]
    else:
        present = True
        text = pattern.format(value=word(value), var=word(value).lower().replace("-", "_"))
    return _in_file([b for b in blocks if b.kind == "nginx"], "nginx.conf", text, present, "nginx")


def _in_file(blocks: list[Block], name: str, text: str, present: bool, role: str) -> tuple[str, str, str]:
    if not blocks:
        return "mismatch", f"{MISSING}: no {role} process", role
    content = next((b.files[name] for b in blocks if name in b.files), None)
    if content is None:
        used = any(name in b.cmd or any(name in " ".join(a) for a in b.args) for b in blocks)
        return ("unverified", f"{name} is not in the cookbook", role) if used else ("mismatch", f"{MISSING}: the command reads no {name}", role)
    if (text in content) == present:
        return "match", f"{name} {'has' if present else 'lacks'} `{text}`", role
    return "mismatch", f"{DIFFERENT}: {name} {'lacks' if present else 'has'} `{text}`", role


# --- the once-per-point checks ------------------------------------------------------------------------

def check(ctx: Ctx) -> list[Finding]:
    return [*_blocks(ctx), *_topologies(ctx), *_bootstrap_ports(ctx), *_frontend_count(ctx), *_workers(ctx), *_image(ctx)]


# What `check` reads, besides the point's expectations and what a block's `Scope` records: two points
# equal in these get the same findings (`compare.PointMemo.shape`). Keep these next to the checks.
_LOOKED_UP = ("--model-path", "--model", "--kv-events-config", "--request-plane")   # flags `_has` asks about
_TOPOLOGY_SETTINGS = ("workers", "gpus", "nodes")                         # `roles.<role>.<setting>` of `_same`
_FRONTEND_COUNT = "frontend.enable_multiple_frontends"


def block_shape(block: Block, args_by_key: Mapping[str, Any]) -> tuple[Any, ...]:
    """What `check` reads of one block: every field but its args and env, and of those: the `--port`
    values, which of `_LOOKED_UP` it has (`args_by_key`: its args by flag key, as `_has` looks them
    up), its `CUDA_VISIBLE_DEVICES`, whether it sets `DYN_REQUEST_PLANE` and which of its kind's
    required settings it shows."""
    worker = block.kind == "worker"
    fields = tuple((k, tuple(v.items()) if isinstance(v, dict) else v) for k, v in block.__dict__.items() if k not in ("args", "env"))
    has = tuple(flag_key(flag, worker) in args_by_key for flag in _LOOKED_UP)
    env = block.env.get("CUDA_VISIBLE_DEVICES"), "DYN_REQUEST_PLANE" in block.env
    return fields, block_ports(block), has, env, _shows_required(block, args_by_key)


# Every setting that binds a port on the worker's node: HTTP, disaggregation bootstrap, KV events
# (`tcp://*:5557` in its JSON), metrics, and the distributed-init / NCCL rendezvous.
_LAST_NUMBER = re.compile(r"(\d{2,5})\D*$")


def block_ports(block: Block) -> tuple[tuple[str, str], ...]:
    """(setting, port) for each port setting of the block: the last number of its value (none for `$PORT`)."""
    names = table()["port_settings"]
    values = [(a[0], " ".join(a[1:])) for a in block.args if a[0] in names]
    values += [(k, v) for k, v in block.env.items() if k in names]
    return tuple((name, m.group(1)) for name, text in values if (m := _LAST_NUMBER.search(text)))


def recipe_shape(ctx: Ctx) -> tuple[Any, ...]:
    """What `check` reads of the recipe and the published point besides the blocks: the services'
    types, which roles set `kv-events-config` themselves, where the topology settings are, the image."""
    data = ctx.recipe.data
    roles = data.get("roles") or {}
    kv_own = tuple(role for role, spec in roles.items() if isinstance(spec, dict) and "kv-events-config" in (spec.get("args") or {}))
    paths: list[tuple[str, ...]] = [("roles", role, setting) for role in ctx.expect.roles for setting in _TOPOLOGY_SETTINGS]
    paths.append(tuple(_FRONTEND_COUNT.split(".")))
    return (tuple(str(s.get("type")) for s in data.get("services") or []), kv_own, tuple(map(ctx.where, paths)), ctx.published.image)


def role_label(block: Block) -> str:
    """The role a block's findings name: a worker's role, else its kind (`router` for every router)."""
    return block.role if block.kind == "worker" and block.role else KIND_LABEL.get(block.kind, block.kind)


def _frontend(ctx: Ctx) -> dict[str, RawYaml]:
    """The `frontends` entry of synthesized.yaml for the point's frontend type (empty for another type)."""
    return table()["frontends"].get(ctx.expect.frontend, {})  # type: ignore[no-any-return]


def _ports_item(name: str) -> str:
    return "ports" if name == "--port" else f"ports {name}"


def expected_blocks(ctx: Ctx) -> dict[tuple[str, str | None], tuple[str, bool]]:
    """(kind, role) -> (recipe path that asks for it, required)."""
    out: dict[tuple[str, str | None], tuple[str, bool]] = {("worker", r): (f"roles.{r}", True) for r in ctx.expect.roles}
    fe = _frontend(ctx)
    optional = bool(fe.get("direct")) and ctx.expect.single_worker
    out.update({(k, None): ("frontend.type", not optional) for k in fe.get("kinds", [])})
    for i, svc in enumerate(ctx.recipe.data.get("services") or []):
        out[(str(svc.get("type")), None)] = (f"services[{i}].type", True)
    if ctx.expect.store is not None:       # srtctl v1.0.68 starts the store's master itself
        out[("mooncake-master", None)] = ("engine.mooncake_kv_store", True)
    for kind, entry in table()["blocks"].items():     # implied blocks: the table's check holds for this point
        if (entry.get("required") and (kind, None) not in out and ctx.blocks
                and isinstance(explain_block(kind, ctx.scope(ctx.blocks[0])), Explanation)):
            out[(kind, None)] = (f"synthesized.blocks.{kind}", True)
    return out


def _blocks(ctx: Ctx) -> list[Finding]:
    expected = expected_blocks(ctx)
    published = {(b.kind, b.role if b.kind == "worker" else None): b for b in ctx.blocks}
    out = []
    for (kind, role), (path, required) in expected.items():
        label = role or KIND_LABEL.get(kind, kind)
        if (kind, role) in published:
            out.append(ctx.finding(label, "block", kind, "match", detail="present", path=path))
        elif required:
            out.append(ctx.finding(label, "block", kind, "mismatch", detail=MISSING, path=path))
    for (kind, role), block in published.items():
        if (kind, role) not in expected:
            verdict = explain_block(kind, ctx.scope(block))
            cls, detail, reason = ("match", "added by the cookbook", verdict.reason) if isinstance(verdict, Explanation) else ("mismatch", EXTRA, verdict.reason)
            out.append(ctx.finding(role_label(block), "block", kind, cls, detail=detail, reason=reason))
    return out


def _pins(blocks: list[Block]) -> set[str]:
    pins = {",".join(x for x in p if x) for b in blocks for p in b.gpu_pinning or ()}
    pins |= {b.env["CUDA_VISIBLE_DEVICES"] for b in blocks if "CUDA_VISIBLE_DEVICES" in b.env}
    return {p for p in pins if p}


def _topologies(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    previous: list[Block] = []
    for role, topo in ctx.expect.roles.items():
        blocks = ctx.role_blocks(role)
        if blocks:
            out.extend(_topology(ctx, topo, blocks))
            if topo.nodes == 0 and previous:           # on the node the previous role leaves room on
                out.extend(_ports_across_roles(ctx, topo.role, previous[-1], blocks[0]))
        previous = blocks
    return out


def _ports_across_roles(ctx: Ctx, role: str, before: Block, block: Block) -> list[Finding]:
    """A mismatch per port that a worker shares with the other role's worker on its node (both set it, or
    neither sets the one every worker needs of its own)."""
    mine, theirs = dict(block_ports(block)), dict(block_ports(before))
    names = sorted({_frontend(ctx).get("port_env", "--port")} | (set(mine) & set(theirs)))
    return [ctx.finding(role, "topology", _ports_item(name), "mismatch",
                        detail=f"shares its node with a {before.role} worker but not a distinct {name}", recipe="a port of its own",
                        cookbook=mine.get(name, "default"), path=f"roles.{role}.nodes")
            for name in names if mine.get(name, "default") == theirs.get(name, "default")]


_BOOTSTRAP, _DEFAULT_BOOTSTRAP = "--disaggregation-bootstrap-port", "8998"    # SGLang's default


def _bootstrap_ports(ctx: Ctx) -> list[Finding]:
    """The bootstrap port only has to agree between the roles: each one a decode worker names, and each one
    the router's `--prefill URL PORT` names, must be a prefill worker's (its `--disaggregation-bootstrap-port`,
    else SGLang's default)."""
    prefill = ctx.role_blocks("prefill")
    if not prefill:
        return []
    ports = {dict(block_ports(b)).get(_BOOTSTRAP, _DEFAULT_BOOTSTRAP) for b in prefill}
    named = [(role, dict(block_ports(b)).get(_BOOTSTRAP)) for role in ("decode",) for b in ctx.role_blocks(role)]
    named += [("router", a[2]) for b in ctx.blocks if b.kind in FRONTEND_KINDS for a in b.args if a[0] == "--prefill" and len(a) > 2]
    return [ctx.finding(role, "topology", _BOOTSTRAP, "match" if port in ports else "mismatch",
                        detail="a prefill worker's" if port in ports else "names no prefill worker's bootstrap port",
                        recipe=" / ".join(sorted(ports)), cookbook=port, path="roles.prefill.args.disaggregation-bootstrap-port")
            for role, port in named if port is not None]


def _topology(ctx: Ctx, topo: RoleTopology, blocks: list[Block]) -> list[Finding]:
    role = topo.role
    workers = sum(b.workers or 1 for b in blocks if not b.node_rank and not b.dp_rank)     # a later node's or DP rank's block: the same workers
    npw = max(b.nodes_per_worker or 1 for b in blocks)
    pins = _pins(blocks)
    per_gpu = topo.dp == "per_gpu"      # one process per GPU: its pin is one GPU; workers share a node by their slots' GPUs
    slots = len(pins) // max(1, topo.gpus // npw) if per_gpu else len(pins)
    nodes = workers * npw if npw > 1 else math.ceil(workers / max(1, slots))
    nodes += max(b.idle_nodes or 0 for b in blocks)      # reserved beyond the workers' nodes (srtctl v1.0.68's packing), as the blocks say
    out = [_same(ctx, role, "workers", str(topo.workers), str(workers), f"roles.{role}.workers"),
           _same(ctx, role, "nodes_per_worker", str(topo.nodes_per_worker), str(npw), f"roles.{role}.gpus")]
    if topo.nodes not in (None, 0):
        out.append(_same(ctx, role, "nodes", str(topo.nodes), str(nodes), f"roles.{role}.nodes"))
    if topo.pins or len(pins) > 1:
        want = _per_gpu_pins(topo) if per_gpu else " / ".join(topo.pins) or "none"
        out.append(_same(ctx, role, "gpu_pinning", want, " / ".join(sorted(pins)) or "none", f"roles.{role}.gpus"))
    return out + (_shared_ports(ctx, topo, blocks) if topo.per_node > 1 else [])


def _per_gpu_pins(topo: RoleTopology) -> str:
    """The GPUs the per_gpu processes of a role take on a node, one each: every GPU of each slot."""
    local = topo.gpus // topo.nodes_per_worker
    starts = [int(pin.split(",")[0]) for pin in topo.pins] or [0]
    return " / ".join(sorted({str(start + gpu) for start in starts for gpu in range(local)}))


def _shared_ports(ctx: Ctx, topo: RoleTopology, blocks: list[Block]) -> list[Finding]:
    """A mismatch per port setting that co-located workers share (a block without it uses the default, its own value)."""
    ports = [dict(block_ports(b)) for b in blocks]
    out = []
    required = _frontend(ctx).get("port_env", "--port")   # the one every engine's workers differ in
    for name in sorted({required} | {name for found in ports for name in found}):
        values = {found.get(name, "default") for found in ports}
        if len(values) < min(topo.per_node, topo.workers):
            out.append(ctx.finding(topo.role, "topology", _ports_item(name), "mismatch", detail=f"{topo.per_node} workers share a node but not a distinct {name}{'' if name == '--port' else ' port'} each",
                                   recipe=f"{topo.per_node} per node", cookbook=" / ".join(sorted(values)), path=f"roles.{topo.role}.workers"))
    return out


def _same(ctx: Ctx, role: str, item: str, want: str, got: str, path: str) -> Finding:
    ok = want == got
    return ctx.finding(role, "topology", item, "match" if ok else "mismatch", detail="same" if ok else DIFFERENT,
                       recipe=want, cookbook=got, path=path, where=ctx.where(tuple(path.split("."))))


def _frontend_count(ctx: Ctx) -> list[Finding]:
    blocks = [b for b in ctx.blocks if b.kind == "dynamo-frontend"]
    if not ctx.expect.dynamo or not blocks:
        return []
    got = sum(b.count or 1 for b in blocks)
    return [_same(ctx, "frontend", "count", str(ctx.expect.frontend_count), str(got), _FRONTEND_COUNT)]


def _workers(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    want_cmd = _frontend(ctx).get("worker_cmd", "sglang")
    for block in ctx.blocks:
        if block.kind == "worker":
            ok = _runs(block.cmd, want_cmd)
            out.append(ctx.finding(role_label(block), "block", "cmd", "match" if ok else "mismatch", detail="same" if ok else DIFFERENT,
                                   recipe=want_cmd, cookbook=block.cmd, path="frontend.type"))
            out.extend(_worker_must_have(ctx, block))
        if block.kind in ("worker", "dynamo-frontend"):
            out.extend(_request_plane(ctx, block))
        out.extend(_required(ctx, block))
    return out


def _shows_required(block: Block, args_by_key: Mapping[str, Any]) -> tuple[bool, ...]:
    """Which of its kind's required args and env (synthesized.yaml) the block shows."""
    worker = block.kind == "worker"
    return tuple(flag_key(name, worker) in args_by_key if section == "args" else name in block.env
                 for section, name in required_settings(block.kind))


def _required(ctx: Ctx, block: Block) -> list[Finding]:
    """A mismatch per arg or env the block leaves out although the point needs it (`required` in synthesized.yaml)."""
    shown = _shows_required(block, ctx.args_by_key(block, block.kind == "worker"))
    if all(shown):
        return []
    out = []
    scope = ctx.scope(block)
    for (section, name), present in zip(required_settings(block.kind), shown):
        problem = None if present else missing(section, block.kind, name, scope)
        if problem is not None:
            out.append(ctx.finding(role_label(block), "arg" if section == "args" else "env", name, "mismatch", detail=MISSING,
                                   reason=problem.reason, path=problem.path))
    return out


def _runs(cmd: str, program: str) -> bool:
    """Whether `cmd` runs `program` (`dynamo.sglang`, `vllm serve`): whole words, or a module inside it
    (`sglang` runs `sglang.launch_server`), not a longer name (`dynamo.sglang` is not `sglang`)."""
    return re.search(rf"(?<![\w.-]){re.escape(program)}(?![\w-])", cmd) is not None


def _has(ctx: Ctx, block: Block, flag: str) -> bool:
    worker = block.kind == "worker"
    return flag_key(flag, worker) in ctx.args_by_key(block, worker)


def _worker_must_have(ctx: Ctx, block: Block) -> list[Finding]:
    role = block.role or "agg"
    out = []
    in_cmd = _frontend(ctx).get("model_in_cmd")
    model_flag = str(_frontend(ctx).get("model_flag", "--model-path"))
    if not (ctx.expect.model_id in shlex.split(block.cmd) if in_cmd else _has(ctx, block, model_flag)):
        out.append(ctx.finding(role, "arg", "model" if in_cmd else model_flag, "mismatch", detail=MISSING,
                               recipe=ctx.expect.model_id, path="model.path"))
    else:
        out.append(ctx.finding(role, "setting", "model.path", "placeholder", detail="the command uses the model id",
                               recipe=ctx.expect.model_id, reason="cluster alias of the weights; --model-path is the Hugging Face id", path="model.path"))
    spec = (ctx.recipe.data.get("roles") or {}).get(role) or {}
    if ctx.expect.kv_events.get(role) and "kv-events-config" not in (spec.get("args") or {}) and not _has(ctx, block, "--kv-events-config"):
        out.append(ctx.finding(role, "arg", "--kv-events-config", "mismatch", detail=MISSING, recipe="(from kv_events)",
                               path=f"roles.{role}.kv_events"))
    return out


def _request_plane(ctx: Ctx, block: Block) -> list[Finding]:
    plane = ctx.expect.request_plane
    if not ctx.expect.dynamo or plane is None or _has(ctx, block, "--request-plane") or "DYN_REQUEST_PLANE" in block.env:
        return []
    return [ctx.finding(role_label(block), "arg", "--request-plane", "mismatch", detail=MISSING, recipe=str(plane),
                        path="dynamo.request_plane")]


def _image(ctx: Ctx) -> list[Finding]:
    want, got = ctx.expect.image, ctx.published.image
    if not got or not want:
        return [ctx.finding("cell", "image", "image", "unverified", detail="the cookbook or the master config names no image",
                            recipe=want or None, cookbook=got or None)]
    ok = same_image(want, got)
    return [ctx.finding("cell", "image", "image", "match" if ok else "mismatch", detail="same" if ok else DIFFERENT,
                        recipe=want, cookbook=got, path=f"{ctx.expect.config}.image", where=ctx.expect.image_where)]


def same_image(a: str, b: str) -> bool:
    """The same `@sha256:` digest when both pin one; else the same repository and tag."""
    (ra, _, da), (rb, _, db) = a.partition("@"), b.partition("@")
    return da == db if da and db else ra == rb
