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


def _gpu_pinning(words: Words, scope: Scope, entry: RawYaml) -> Miss | None:
    topo = _topology(scope)
    if topo is None:
        return _absent("no such role in the recipe")
    if topo.pins:
        return None if words and words[0] in topo.pins else _wrong(f"expected one of {' / '.join(topo.pins)}")
    gpus = words[0].split(",") if words else []
    return None if len(gpus) == topo.gpus else _wrong(f"expected {topo.gpus} GPUs per worker")


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
