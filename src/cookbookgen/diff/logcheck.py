"""Stage 4 of the diff (compare, with logs): compare published commands with what the workers really ran. No I/O (see `sources.read_logs`).

- A `server_args=ServerArgs(...)` line belongs to the role its `disaggregation_mode` names (`null`:
  agg). It is compared with that role's worker blocks of every candidate point, and reported against
  the point it agrees with most: every flag of the command whose logged field differs is a mismatch,
  a flag whose field the log lacks is unverified; site-specific flags (`log_ignore` of
  `synthesized.yaml`) are skipped. A line that has none of the command's fields verifies nothing:
  one mismatch, not a parity of unverified flags.
- An srt-slurm resolved `config*.yaml` is compared role by role the same way: each arg (snake_case
  or kebab-case, mapped to the flag) and env entry the policy publishes must be in the command with
  the same value.
Identical lines (one per rank) are compared once.
"""

from __future__ import annotations

from typing import Sequence

from ..policy.rules import DROPPED, Policy
from ..render.model import Block
from .aliases import normal_flag
from .tables import table
from .logs import (
    LogDifference,
    RoleSettings,
    ServerArgsDict,
    compare_with_args,
)
from .model import DIFFERENT, MISSING, Finding, PublishedPoint
from .sources import RunLogs
from ..render.values import word
from .words import flag_key, recipe_words, shown, words_equal

def _workers(point: PublishedPoint, role: str) -> list[Block]:
    return [b for b in point.blocks if b.kind == "worker" and b.role == role]


def _compared_args(block: Block) -> list[tuple[str, ...]]:
    ignore = table()["log_ignore"]
    return [a for a in block.args if normal_flag(a[0]) not in ignore]


def _label(point: PublishedPoint) -> str:
    return point.point_id or point.label


def check_logs(logs: RunLogs, points: Sequence[PublishedPoint], policy: Policy) -> list[Finding]:
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for file, line, args in logs.server_args:
        key = (_role(args), repr(sorted(args.items(), key=lambda kv: kv[0])))
        if key not in seen:
            seen.add(key)
            out.extend(_server_args(file, line, args, key[0], points))
    for file, roles in logs.configs:
        out.extend(_config(file, roles, points, policy))
    return out


def _role(args: ServerArgsDict) -> str:
    """The role a ServerArgs line belongs to: its `disaggregation_mode` (none or `null`: agg)."""
    mode = str(args.get("disaggregation_mode"))
    return mode if mode in ("prefill", "decode") else "agg"


def _server_args(file: str, line: int, args: ServerArgsDict, role: str, points: Sequence[PublishedPoint]) -> list[Finding]:
    cands = [(p, b) for p in points for b in _workers(p, role)]
    if not cands:
        return [Finding("", "", role, "log", "ServerArgs", "mismatch", detail=f"the cookbook has no {role} worker",
                        where=f"{file}:{line}")]
    point, block = min(cands, key=lambda pb: sum(d.kind == "different" for d in compare_with_args(args, _compared_args(pb[1]))))
    diffs = {d.flag: d for d in compare_with_args(args, _compared_args(block))}
    found = [_log_finding(point, role, a, diffs.get(a[0]), f"{file}:{line}") for a in _compared_args(block)
             if diffs.get(a[0]) is None or diffs[a[0]].kind != "not-a-server-arg"]
    if all(f.cls == "unverified" for f in found):   # not parity: the line checked none of the command
        return [Finding(point.config, _label(point), role, "log", "ServerArgs", "mismatch", where=f"{file}:{line}",
                        detail=f"the logged ServerArgs has none of the {len(found)} fields of the {role} worker's flags: it verifies nothing")]
    return found


def _log_finding(point: PublishedPoint, role: str, arg: tuple[str, ...], diff: LogDifference | None, where: str) -> Finding:
    head = (point.config, _label(point), role, "log", arg[0])
    command, reason = shown(tuple(arg[1:])), "the worker's logged server_args"
    if diff is None:
        return Finding(*head, "match", detail="logged the same value", cookbook=command, where=where, reason=reason)
    if diff.kind == "missing-in-log":
        return Finding(*head, "unverified", detail=f"the log has no field {diff.field}", cookbook=command, where=where, reason=reason)
    return Finding(*head, "mismatch", detail=f"{DIFFERENT}: the worker ran {diff.field}={diff.logged_value!r}",
                   recipe=repr(diff.logged_value), cookbook=command, where=where, reason=reason)


def _config(file: str, roles: dict[str, RoleSettings], points: Sequence[PublishedPoint], policy: Policy) -> list[Finding]:
    scored = [(p, [f for r, s in roles.items() for f in _config_role(file, r, s, p, policy)]) for p in points]
    scored = [(p, fs) for p, fs in scored if fs]
    if not scored:
        return [Finding("", "", "job", "log", file, "mismatch", detail="no cookbook point has the config's roles", where=file)]
    return min(scored, key=lambda pf: sum(f.is_mismatch for f in pf[1]))[1]


def _config_role(file: str, role: str, settings: RoleSettings, point: PublishedPoint, policy: Policy) -> list[Finding]:
    blocks = _workers(point, role)
    if not blocks:
        return []
    block = blocks[0]
    out = []
    for flag, value in settings["args"].items():
        got = [tuple(a[1:]) for a in block.args if flag_key(a[0], True) == flag_key(flag, True)]
        out.append(_config_entry(file, point, role, ("roles", role, "args", flag[2:]), flag, value, recipe_words(value), got, policy))
    for name, value in settings["env"].items():
        got = [(block.env[name],)] if name in block.env else []
        out.append(_config_entry(file, point, role, ("roles", role, "env", name), name, value, (word(value),), got, policy))
    return [f for f in out if f is not None]


def _config_entry(file: str, point: PublishedPoint, role: str, path: tuple[str, ...], item: str, value: object,
                  want: tuple[str, ...] | None, got: list[tuple[str, ...]], policy: Policy) -> Finding | None:
    rule = policy.first_match(path, value)
    if rule is not None and (rule.cls in DROPPED or rule.cls == "placeholder"):
        return None
    head = (point.config, _label(point), role, "log", item)
    same = want is None or any(words_equal(want, g) for g in got)
    return Finding(*head, "match" if same else "mismatch", detail="same value" if same else DIFFERENT if got else MISSING,
                   recipe=shown(want), cookbook=shown(got[0]) if got else None, where=file, reason="srt-slurm's resolved config of the run")
