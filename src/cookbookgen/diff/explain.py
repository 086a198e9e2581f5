"""Stage 4 of the diff (compare): explanations for what a cookbook adds to a recipe, the checks of the
`synthesized.yaml` table (`tables`) against a point's expectations (`expect`). No I/O. A check gets the words the cookbook shows and the `Scope` of the block, and returns `None`
when the addition is explained or a sentence saying why it is not. Checks are looked up by name in
`CHECKS` (a table, not a branch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from ..errors import CookbookError
from ..policy.rules import glob_matches
from ..render.model import Block
from .expect import PointExpect
from .model import DIFFERENT, EXTRA
from .tables import glossary, table


RawYaml = Any
Words = tuple[str, ...]


@dataclass(frozen=True)
class Scope:
    """Where a cookbook setting sits: the point's expectations and the block. Checks see nothing
    else (not the sibling blocks): `compare.PointMemo` relies on it. `read_args` lists the flags a
    check looked up among the block's args (a verdict that read none depends on the block's role only)."""

    expect: PointExpect
    block: Block
    read_args: list[str] = field(default_factory=list, compare=False, hash=False)

    @property
    def role(self) -> str | None:
        return self.block.role

    def workers_of(self, role: str) -> int:
        topo = self.expect.roles.get(role)
        return topo.workers if topo else 0

    def args_named(self, flag: str) -> list[tuple[str, ...]]:
        self.read_args.append(flag)
        return [a for a in self.block.args if a[0] == flag]


@dataclass(frozen=True)
class Explanation:
    cls: str
    reason: str
    rule: str
    path: str = ""  # the recipe setting the addition comes from, when one does


@dataclass(frozen=True)
class Miss:
    """Why a cookbook setting is not explained: `detail` is EXTRA (it does not belong) or DIFFERENT (wrong value)."""

    detail: str
    reason: str
    path: str = ""


def _absent(reason: str) -> Miss:
    return Miss(EXTRA, reason)


def _wrong(reason: str) -> Miss:
    return Miss(DIFFERENT, reason)


Check = Callable[[Words, Scope, RawYaml], Miss | None]


def _any(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    return None


def _value(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    want = str(entry.get("value"))
    return None if words == (want,) else _wrong(f"expected {want}")


def _number(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    return None if len(words) == 1 and words[0].isdigit() else _wrong("expected one port number")


def _model_id(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    return None if words == (scope.expect.model_id,) else _wrong(f"expected the model id {scope.expect.model_id}")


def _role(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    return None if words == (scope.role,) else _wrong(f"the block's role is {scope.role}")


def _bootstrap_port(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    if scope.role not in ("prefill", "decode"):
        return _absent("only prefill workers, and the decode workers that name theirs, take a bootstrap port")
    return _number(words, scope, entry)


def _topology(scope: Scope) -> Any:
    return scope.expect.roles.get(scope.role or "")


def _multi_node(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _topology(scope)
    return None if topo and topo.nodes_per_worker > 1 else _absent("the recipe's workers fit on one node")


def _nodes_per_worker(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _topology(scope)
    want = str(topo.nodes_per_worker) if topo else "1"
    return None if words == (want,) else _wrong(f"the recipe gives {want} node(s) per worker")


def _request_plane(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    if not scope.expect.dynamo:
        return _absent("not a Dynamo deployment")
    want = scope.expect.effective_request_plane
    return None if words == (want,) else _wrong(f"the recipe's request plane is {want}")


def _kv_events(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    setting = scope.expect.kv_events.get(scope.role or "")
    if not setting:
        return _absent(f"roles.{scope.role}.kv_events is not set")
    try:
        config = json.loads(words[0]) if len(words) == 1 else None
    except ValueError:
        config = None
    if not isinstance(config, dict) or "endpoint" not in config:
        return _wrong("expected a JSON publisher config with an endpoint")
    wanted = setting if isinstance(setting, dict) else {}
    wrong = sorted(k for k, v in wanted.items() if k != "endpoint" and config.get(k) != v)
    return _wrong(f"differs from roles.{scope.role}.kv_events in {', '.join(wrong)}") if wrong else None


def _kv_events_port(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    if not scope.expect.kv_events.get(scope.role or ""):
        return _absent(f"roles.{scope.role}.kv_events is not set")
    return _number(words, scope, entry)


def _gpu_pinning(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _topology(scope)
    if topo is None:
        return _absent("no such role in the recipe")
    if topo.dp == "per_gpu":
        return _per_gpu_device(words, scope, topo)
    if topo.pins:
        return None if words and words[0] in topo.pins else _wrong(f"expected one of {' / '.join(topo.pins)}")
    gpus = words[0].split(",") if words else []
    return None if len(gpus) == topo.gpus else _wrong(f"expected {topo.gpus} GPUs per worker")


def _per_gpu_device(words: Words, scope: Scope, topo: Any) -> Miss | None:
    """The one GPU of a per_gpu process: srtctl numbers the ranks node by node in GPU order, so rank r runs on
    GPU r mod (the worker's GPUs per node), counted from its slot's first GPU."""
    gpu = (scope.block.dp_rank or 0) % (topo.gpus // topo.nodes_per_worker)
    offsets = [int(pin.split(",")[0]) for pin in topo.pins] or [0]
    return None if words in {(str(o + gpu),) for o in offsets} else _wrong(f"expected the GPU of DP rank {scope.block.dp_rank or 0}")


def _dynamo(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    if not scope.expect.dynamo:
        return _absent("not a Dynamo deployment")
    return _value(words, scope, entry) if "value" in entry else None


def _mooncake(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    if not scope.expect.mooncake:
        return _absent("the recipe declares no Mooncake service")
    return _value(words, scope, entry)


def _router_count(role: str, flag: str) -> Check:
    def check(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
        want, got = scope.workers_of(role), len(scope.args_named(flag))
        return None if want == got else _wrong(f"{got} {flag} entries for {want} {role} worker(s)")
    return check


def _router_workers(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    want = scope.workers_of("agg")
    return None if len(words) == want else _wrong(f"{len(words)} URLs for {want} aggregated worker(s)")


def _disaggregated(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    """A switch for a point with prefill and decode roles (given a value, the router refuses it)."""
    if not {"prefill", "decode"} <= set(scope.expect.roles):
        return _absent("the recipe is not disaggregated")
    return _wrong(f"a switch, given the value {' '.join(words)}") if words else None


def _sglang_multi_node(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    """Whether an SGLang worker may leave out the multi-node flags: only when it fits on one node."""
    topo = _topology(scope)
    if topo is None or topo.nodes_per_worker < 2 or "sglang" not in scope.block.cmd:
        return None
    return _wrong(f"an SGLang worker on {topo.nodes_per_worker} nodes needs it")


def _disaggregation_role(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    """Whether a worker may leave out its disaggregation mode: an aggregated one, or a vLLM one (vLLM has no such flag)."""
    if scope.role not in ("prefill", "decode") or "vllm" in scope.block.cmd:
        return None
    return _wrong(f"without it, a {scope.role} worker runs aggregated")


def _disaggregated_router(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    """Whether a router may leave out its prefill/decode switch: only when the point is not disaggregated."""
    return _wrong("the point has prefill and decode roles") if _disaggregated(words, scope, entry) is None else None


def _several_frontends(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    return None if scope.expect.dynamo and scope.expect.nginx else _absent("the recipe runs one frontend and no nginx")


def _vllm_worker(scope: Scope) -> Any:
    """The role's topology when the block is a vLLM worker, else None."""
    return _topology(scope) if scope.block.kind == "worker" and "vllm" in scope.block.cmd else None


def _head(scope: Scope, topo: Any) -> str:
    return f"${(scope.role or '').upper()}_HEAD_IP" if topo.nodes_per_worker > 1 else "$NODE_IP"


def _dp_local(topo: Any) -> int | None:
    """DP ranks per node of a per_node DP role whose replicas fit on a node (srtctl passes the local DP
    flags then), else None (its replicas span nodes: the multi-node flags instead)."""
    local_gpus = topo.gpus // topo.nodes_per_worker
    return local_gpus // topo.replica if topo.dp == "per_node" and topo.replica <= local_gpus else None


def _expected(scope: Scope, want: str | None, words: Words, why_not: str) -> Miss | None:
    """`words` against the value the recipe implies (`want`: `()`-word switch as ""; None: the block should not have it)."""
    if want is None:
        return _absent(why_not)
    wanted = (want,) if want else ()
    return None if words == wanted else _wrong(f"expected {want or 'a switch'}")


def _vllm_master_addr(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    spans = topo is not None and topo.nodes_per_worker > 1 and topo.dp != "per_gpu" and _dp_local(topo) is None
    return _expected(scope, _head(scope, topo) if spans else None, words, "only a vLLM worker whose replica spans nodes has a head node to name")


def _vllm_headless(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    later = topo is not None and topo.dp != "per_gpu" and _dp_local(topo) is None and bool(scope.block.node_rank)
    return _expected(scope, "" if later else None, words, "only the processes of a multi-node vLLM worker on its later nodes are headless")


def _switch_required(check: Check, what: str) -> Check:
    """The `required` check of a switch: a block that leaves it out is wrong where `check` expects it (given
    no words, a switch check cannot tell a shown switch from a missing one)."""
    def required(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
        return _wrong(what) if check(("?",), scope, entry) is not None and check((), scope, entry) is None else None
    return required


def _vllm_dp_size_local(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    local = _dp_local(topo) if topo else None
    return _expected(scope, None if local is None else str(local), words, "not a per_node data-parallel vLLM role whose replicas fit on a node")


def _vllm_dp_start_rank(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    local = _dp_local(topo) if topo else None
    want = None if local is None else str((scope.block.node_rank or 0) * local)
    return _expected(scope, want, words, "not a per_node data-parallel vLLM role whose replicas fit on a node")


def _vllm_dp_hybrid_lb(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    fits = topo is not None and _dp_local(topo) is not None
    return _expected(scope, "" if fits else None, words, "not a per_node data-parallel vLLM role whose replicas fit on a node")


def _vllm_dp_address(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    return _expected(scope, _head(scope, topo) if topo and topo.dp else None, words, "not a data-parallel vLLM role of a v1 recipe")


def _vllm_dp_rpc_port(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    if topo is None or not topo.dp:
        return _absent("not a data-parallel vLLM role of a v1 recipe")
    return _number(words, scope, entry)


def _vllm_dp_rank(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _vllm_worker(scope)
    per_gpu = topo is not None and topo.dp == "per_gpu"
    return _expected(scope, str(scope.block.dp_rank or 0) if per_gpu else None, words, "not a per_gpu data-parallel vLLM role")


def _vllm_device_ids(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    """The GPUs of one process: its one GPU (per_gpu), one of the co-located slots' pins, else the GPUs the
    worker uses on each node, from 0."""
    topo = _vllm_worker(scope)
    if topo is None or not scope.expect.device_ids:
        return _absent("only vLLM workers of a recipe whose srtctl pins GPUs with --device-ids take it")
    if topo.dp == "per_gpu":
        return _per_gpu_device(words, scope, topo)
    if topo.pins:
        return None if words and words[0] in topo.pins else _wrong(f"expected one of {' / '.join(topo.pins)}")
    return _expected(scope, ",".join(map(str, range(topo.gpus // topo.nodes_per_worker))), words, "")


def _store_master(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    if scope.expect.store is None:
        return _absent("srtctl passes it to the master of a v1 recipe's mooncake_kv_store only")
    return _value(words, scope, entry)


def _store_config_path(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    if scope.expect.store is None or scope.expect.engine != "vllm":
        return _absent("only a vLLM worker of a recipe with mooncake_kv_store reads a store_config file")
    return _value(words, scope, entry)


CHECKS: dict[str, Check] = {
    "any": _any,
    "value": _value,
    "number": _number,
    "model_id": _model_id,
    "role": _role,
    "bootstrap_port": _bootstrap_port,
    "multi_node": _multi_node,
    "nodes_per_worker": _nodes_per_worker,
    "request_plane": _request_plane,
    "kv_events": _kv_events,
    "kv_events_port": _kv_events_port,
    "gpu_pinning": _gpu_pinning,
    "dynamo": _dynamo,
    "mooncake": _mooncake,
    "router_prefill": _router_count("prefill", "--prefill"),
    "router_decode": _router_count("decode", "--decode"),
    "router_workers": _router_workers,
    "disaggregated": _disaggregated,
    "sglang_multi_node": _sglang_multi_node,
    "disaggregated_router": _disaggregated_router,
    "disaggregation_role": _disaggregation_role,
    "several_frontends": _several_frontends,
    "vllm_master_addr": _vllm_master_addr,
    "vllm_headless": _vllm_headless,
    "vllm_headless_required": _switch_required(_vllm_headless, "srtctl starts a multi-node vLLM worker's later nodes --headless"),
    "vllm_dp_hybrid_lb_required": _switch_required(_vllm_dp_hybrid_lb, "srtctl starts each node of a per_node DP role with --data-parallel-hybrid-lb"),
    "vllm_dp_size_local": _vllm_dp_size_local,
    "vllm_dp_start_rank": _vllm_dp_start_rank,
    "vllm_dp_hybrid_lb": _vllm_dp_hybrid_lb,
    "vllm_dp_address": _vllm_dp_address,
    "vllm_dp_rpc_port": _vllm_dp_rpc_port,
    "vllm_dp_rank": _vllm_dp_rank,
    "vllm_device_ids": _vllm_device_ids,
    "store_master": _store_master,
    "store_config_path": _store_config_path,
}


def _entry(section: str, kind: str, name: str) -> RawYaml | None:
    return (table()[section].get(kind) or {}).get(name)


def explain(section: str, kind: str, name: str, words: Words, scope: Scope) -> Explanation | Miss:
    """Why the cookbook shows `name` (an arg or env of a `kind` block), or why that is not explained."""
    entry = _entry(section, kind, name)
    if entry is None:
        return _absent("no recipe setting and no rule explain it")
    path = str(entry.get("recipe", "")).replace("<role>", scope.role or "")
    problem = CHECKS[entry["check"]](words, scope, entry)
    if problem is not None:
        return Miss(problem.detail, problem.reason, path)
    cls, reason = entry["class"], entry["reason"]
    if entry["check"] == "request_plane" and scope.expect.request_plane is None:
        cls, reason = "default-equivalent", "srt-slurm's default request plane (dynamo.request_plane is not set)"
    return Explanation(cls, reason, f"synthesized.{section}.{kind}.{name}", path)


def check_arg(kind: str, name: str, words: Words, scope: Scope) -> Miss | None:
    """Run the synthesized check of a flag the recipe also sets (e.g. `--model-path`), if there is one."""
    entry = _entry("args", kind, name)
    return None if entry is None else CHECKS[entry["check"]](words, scope, entry)


@lru_cache(maxsize=64)
def required_settings(kind: str) -> tuple[tuple[str, str], ...]:
    """The (section, name) of the args and env a block of `kind` may have to show (`required` in `synthesized.yaml`)."""
    return tuple((section, name) for section in ("args", "env")
                 for name, entry in (table()[section].get(kind) or {}).items() if "required" in entry)


def missing(section: str, kind: str, name: str, scope: Scope) -> Miss | None:
    """Why a `kind` block that leaves out the required arg or env `name` does not run as the recipe asks: its
    `required` check, given no words, says it is wrong (a check that says `_absent`, or nothing, lets the block leave it out)."""
    entry = _entry(section, kind, name)
    problem = CHECKS[entry["required"]]((), scope, entry) if entry and "required" in entry else None
    return problem if problem is not None and problem.detail == DIFFERENT else None


def explain_block(kind: str, scope: Scope) -> Explanation | Miss:
    entry = table()["blocks"].get(kind)
    if entry is None:
        return _absent("no recipe setting starts it")
    problem = CHECKS[entry["check"]]((), scope, entry)
    return problem if problem is not None else Explanation("match", entry["reason"], f"synthesized.blocks.{kind}")


@lru_cache(maxsize=65536)
def recipe_check(path: tuple[str, ...]) -> RawYaml | None:
    """The `recipe_checks` entry for a recipe setting (first match), or None. Cached by path: the
    table is read once per process and never changes."""
    for item in table()["recipe_checks"]:
        if glob_matches(tuple(item["match"].split(".")), path):
            return item
    return None



def explain_class(name: str) -> str:
    """`cookbookgen diff --explain NAME`: what a finding class or an unpaired reason means."""
    for group, title in (("classes", "finding class"), ("unpaired", "unpaired reason")):
        if name in glossary()[group]:
            return f"{name} ({title}): {glossary()[group][name]}"
    known = [*glossary()["classes"], *glossary()["unpaired"]]
    raise CookbookError.usage("--explain", f"unknown finding class or unpaired reason {name!r}; expected one of: {', '.join(known)}")
