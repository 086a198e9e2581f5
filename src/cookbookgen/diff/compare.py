"""Stage 4 of the diff (compare): compare one published point with its effective recipe, role by role. No I/O.

The expected side is the effective recipe's own leaves (after base + override + set/unset) and the
policy; the published side is the blocks a cookbook shows. Never the renderer's output for the same
recipe, so a renderer bug shows up as a mismatch.

1. Every recipe leaf is looked up in `synthesized.yaml: recipe_checks` and compared:
   args and env with the blocks of their role, frontend or service (flag spellings normalised, values
   compared as words); policy-dropped settings must be absent; placeholders may show `$NAME`.
2. Structure, once per point: blocks present (workers per role, frontend, services, implied etcd /
   NATS / nginx), worker count, nodes per worker, nodes, GPU pinning, frontend count, request plane,
   KV events, model id, worker command and image.
3. Every cookbook arg and env entry no recipe leaf covers must be explained by `synthesized.yaml`
   (or the cluster's env of the policy), else it is `mismatch: extra in the cookbook`.
"""

from __future__ import annotations

import pickle
import shlex
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import chain
from typing import Any, Callable, Iterable, NamedTuple, Sequence, cast

from ..policy.classify import leaves
from ..policy.rules import DROPPED, Policy, Rule
from ..recipes.bundle import EffectiveRecipe
from ..recipes.load import KeyPath, YamlFloat, dotted, parse_yaml
from ..render.model import Block
from . import structure
from .context import ArgIndexes, Ctx, where_text
from .expect import PointExpect
from .explain import Explanation, Miss, Scope, check_arg, explain, recipe_check
from .model import DIFFERENT, EXTRA, MISSING, Finding, PublishedPoint
from .structure import role_label
from ..render.values import flag as as_flag, word
from .tables import table
from .words import Words, flag_key, recipe_words, shown, words_equal

RawYaml = Any


class Leaf:
    """One recipe leaf under comparison: its path (and that path as text), value, policy rule and `file:line`."""

    __slots__ = ("path", "value", "rule", "where", "dotted", "name")

    def __init__(self, path: KeyPath, value: RawYaml, rule: Rule | None, where: str, dotted_path: str) -> None:
        self.path, self.value, self.rule, self.where, self.dotted = path, value, rule, where, dotted_path
        self.name = str(path[-1])


class PathFacts(NamedTuple):
    """What a recipe leaf's path says, worked out once per process (`path_facts`)."""

    key: tuple[str, ...]        # the path's parts as text
    dotted: str                 # `roles.decode.args.tp-size`
    check: RawYaml | None       # its `synthesized.yaml: recipe_checks` entry
    flag: str                   # the last part as a flag (`--tp-size`), for role args
    arg_key: str                # that flag's key among a worker's args (`words.flag_key`)
    kind: str                   # the kind of its check (`arg`, `env`, ...; "" without one)


def path_facts(path: KeyPath) -> PathFacts:
    """The facts of a leaf path: the same paths recur in every point and config (cached with the
    types of the parts, so that `True` and `1`, which are equal, stay apart)."""
    return _path_facts(path, tuple(map(type, path)))


@lru_cache(maxsize=65536)
def _path_facts(path: KeyPath, types: tuple[type, ...]) -> PathFacts:     # `types`: in the cache key only (0 and '0' differ)
    key = tuple(str(p) for p in path)
    flag = as_flag(key[-1])
    check = recipe_check(key)
    return PathFacts(key, dotted(path), check, flag, flag_key(flag, True), str(check["check"]) if check else "")


def compare_point(expect: PointExpect, recipe: EffectiveRecipe, published: PublishedPoint, policy: Policy,
                  memo: "PointMemo | None" = None) -> list[Finding]:
    """Every finding of one point, in document order, each naming the point. `memo` (one per config)
    lets the points of a config share the findings of the recipe subtrees and blocks they have in common."""
    return stamped(point_findings(expect, recipe, published, policy, memo), expect.point)


def stamped(findings: Iterable[Finding], point: str) -> list[Finding]:
    """`findings` of one point, each naming it (copies of those that name another point)."""
    return [f if f.point == point else replace(f, point=point) for f in findings]


def point_findings(expect: PointExpect, recipe: EffectiveRecipe, published: PublishedPoint, policy: Policy,
                   memo: "PointMemo | None" = None) -> list[Finding]:
    """Every finding of one point, in document order, as `compare_point`, but a finding shared with an
    earlier point of the config (through `memo`) may still name that point: the caller counts them all
    as this point's (`diff.report`) or names the point (`stamped`). No copies: points share most findings."""
    memo = memo if memo is not None else PointMemo()
    same_point = memo.expect_id(expect)
    workers: dict[str, list[Block]] = {}
    others: list[Block] = []
    labels: dict[str, list[Block]] = {}      # by the role their findings name (co-located workers share it)
    for block in published.blocks:
        labels.setdefault(role_label(block), []).append(block)
        if block.kind == "worker":
            workers.setdefault(block.role or "", []).append(block)
        else:
            others.append(block)
    ctx = Ctx(expect, recipe, published, policy, memo.arg_index, workers=workers, others_key=(same_point, *memo.block_ids(others)))
    out = memo.shape(ctx, same_point, len(labels) < len(ctx.blocks))
    for top, value in recipe.data.items():
        if top == "roles" and isinstance(value, dict) and value:
            for role, spec in value.items():
                out += _role_findings(ctx, memo, str(role), spec, same_point, workers.get(str(role), []))
        else:
            out += memo.group(ctx, (top,), value, ctx.others_key)
    for blocks in labels.values():
        if len(blocks) == 1:
            out += memo.extras(ctx, blocks[0], same_point)
        else:       # co-located workers of one role: each finding once
            out += _unique_at_any_point(chain.from_iterable(memo.extras(ctx, b, same_point) for b in blocks))
    return out


def _role_findings(ctx: Ctx, memo: "PointMemo", role: str, spec: RawYaml, same_point: int, blocks: list[Block]) -> list[Finding]:
    """The findings of `roles.<role>`: shared whole when the role and its blocks are unchanged; else
    its env shared when the env and the blocks' env are unchanged, and its args leaf by leaf."""
    prefix: KeyPath = ("roles", role)
    whole = (same_point, *memo.block_ids(blocks))
    if not isinstance(spec, dict) or not spec:
        return memo.group(ctx, prefix, spec, whole)

    def by_section() -> list[Finding]:
        out: list[Finding] = []
        for section, value in spec.items():
            path = prefix + (section,)
            if section == "env" and isinstance(value, dict):
                out += memo.group(ctx, path, value, (same_point, *(memo.intern(tuple(b.env.items())) for b in blocks)))
            elif section == "args" and isinstance(value, dict):
                out += memo.args_section(ctx, path, value, blocks, same_point)
            else:
                out += _group_findings(ctx, path, value, memo)
        return out
    return memo.group(ctx, prefix, spec, whole, by_section)


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    """Findings once each (co-located workers of one role repeat the same ones), in order."""
    return list(dict.fromkeys(findings))


def _unique_at_any_point(findings: Iterable[Finding]) -> list[Finding]:
    """`_unique` of findings that may name an earlier point of the config (`point_findings`): two that
    differ only in the point they name are one (the first is kept; the caller names the point)."""
    seen: dict[tuple[Any, ...], Finding] = {}
    for f in findings:
        seen.setdefault((*f.__dict__.values(),)[2:], f)     # every field after `config` and `point` (one config's findings)
    return list(seen.values())


def _group_findings(ctx: Ctx, prefix: KeyPath, value: RawYaml, memo: "PointMemo") -> list[Finding]:
    """The findings of every recipe leaf under `prefix` (each names its leaf's path, so only the
    findings of one leaf can repeat: one per co-located worker block)."""
    out: list[Finding] = []
    for path, leaf_value in leaves(value, prefix) if isinstance(value, (dict, list)) else ((prefix, value),):
        facts = path_facts(path)
        shown_in = _shown_in(ctx, facts, leaf_value)
        if shown_in is not None:
            out.extend(memo.leaf(ctx, path, facts, leaf_value, shown_in))
        else:
            out.extend(_leaf_once(ctx, path, facts, leaf_value, ctx.where(path)))
    return out


def _scalar_leaf(ctx: Ctx, path: KeyPath, facts: PathFacts, value: RawYaml, where: str, shown_in: tuple[Any, ...] | None) -> list[Finding]:
    """The findings of a scalar leaf: directly when it is shown as is, else by its check."""
    return (shown_in is not None and _shown_as_is(ctx, facts, value, where, shown_in)) or _leaf_once(ctx, path, facts, value, where)


def _leaf_once(ctx: Ctx, path: KeyPath, facts: PathFacts, value: RawYaml, where: str) -> list[Finding]:
    found = _leaf(ctx, Leaf(path, value, ctx.policy.first_match(facts.key, value), where, facts.dotted), facts.check)
    return found if len(found) < 2 else _unique(found)


_ABSENT = object()


def _shown_in(ctx: Ctx, facts: PathFacts, value: RawYaml) -> tuple[Any, ...] | None:
    """What a leaf's findings can depend on besides the leaf itself (unless a check looks at a block's
    scope): for a role's arg or env, what its worker blocks show for it; for a leaf outside roles and
    services, the expectations and the non-worker blocks; nothing (`("leaf",)`) for a role's leaf
    whose check reads the leaf alone (`_LEAF_ONLY`). None for the others (never shared alone)."""
    key = facts.key
    if key[0] != "roles":
        return None if key[0] == "services" else ("other", *ctx.others_key)
    kind = facts.kind
    if len(key) == 4:
        if kind == "arg":
            return _arg_shown(facts.arg_key, [ctx.args_by_key(b, True) for b in ctx.role_blocks(key[1])])
        if kind == "env":
            return ("env", *[b.env.get(key[3], _ABSENT) for b in ctx.role_blocks(key[1])])
    return _LEAF_ALONE if kind in _LEAF_ONLY else None


# The checks of a role's leaf whose findings read the leaf alone (its path, value, policy rule and
# `file:line`): `structure` (checked once per point by `structure.check`), `unverified`, and none
# (the mismatch that asks for a check); as are the policy's excluded and prohibited findings.
_LEAF_ONLY = frozenset(("structure", "unverified", ""))
_LEAF_ALONE = ("leaf",)


def _arg_shown(flag: str, indexes: list[dict[str, tuple[Words, ...]]]) -> tuple[Any, ...]:
    """`_shown_in` of a role's arg: the words each of the role's blocks gives its flag (`indexes`: the blocks' `args_by_key`)."""
    return ("arg", *[index.get(flag, ()) for index in indexes])


_SCALARS = (str, int, float, bool, YamlFloat)    # the exact types a YAML scalar has (a float keeps its spelling: `YamlFloat`)
_SHOWN_AS_COMPARED = frozenset(("harness-only", "default-equivalent", "placeholder", "prohibited"))   # `_judge`'s other paths


def _shown_as_is(ctx: Ctx, facts: PathFacts, value: RawYaml, where: str, shown_in: tuple[Any, ...]) -> list[Finding] | None:
    """The usual case of a role's arg or env leaf, made directly: a scalar that each of the role's
    blocks shows with the recipe's very words, under no rule or a rule that publishes it. The finding
    is the one `_leaf_once` makes (one for all the blocks, as it makes them once each;
    `tests/test_diff_memo.py` checks both ways agree); None for anything else."""
    kind = type(value)
    if len(shown_in) < 2 or shown_in[0] not in ("arg", "env") or kind not in _SCALARS:
        return None             # not a role's arg or env (a leaf outside roles is compared with the expectations)
    key = facts.key
    text = value if kind is str else word(value)        # the value's one word
    if shown_in[0] == "arg":
        want: Words = () if value is True else (text,)
        for got in shown_in[1:]:
            if len(got) != 1 or got[0] != want:       # absent, repeated or different: `_arg_leaf` says which
                return None
        item = facts.flag
        if value is True:
            text = "(switch)"   # as `words.shown` prints a bare flag
    else:                       # env
        if shown_in[1:].count(text) != len(shown_in) - 1:
            return None
        item = key[3]
    rule = ctx.policy.first_match(key, value)
    if rule is not None and rule.cls in _SHOWN_AS_COMPARED:
        return None
    return [Finding(ctx.expect.config, ctx.expect.point, key[1], shown_in[0], item, "match", detail="same value", recipe=text,
                    cookbook=text, path=facts.dotted, where=where, rule=rule.text if rule else "",
                    reason=rule.reason if rule else "no policy rule: published")]


@dataclass
class PointMemo:
    """What the points of one config share, so that each subtree is compared once.

    The points of a bundle share the subtrees of their effective recipe that their override leaves
    alone (`recipes.merge.deep_merge` shares structure; an override always makes new mappings), and
    equal inputs render equal blocks. The findings of the leaves under one recipe path are a function
    of: the subtree there (the same object: equal content, and set by the same YAML lines, which the
    origin of the path and the file confirm), the policy, the point's expectations but its name, and
    the blocks those leaves are compared with (a role's worker blocks for `roles.<role>`, the other
    blocks for the rest; explanations see one block and the expectations, never the sibling blocks).
    Equal keys give the stored findings (naming the point they were computed for). Below a changed subtree, leaves
    are shared one by one (`leaf`, `args_section`): keyed by the value object, its line, and what the
    blocks show for it. Findings whose check looked at a block's scope are never shared. The point's
    shape checks are shared by the points equal in what those checks read (`shape`).
    """

    contents: dict[Any, int] = field(default_factory=dict)
    blocks: dict[int, tuple[Block, int]] = field(default_factory=dict)
    findings: dict[tuple[Any, ...], tuple[Any, list[Finding]]] = field(default_factory=dict)
    leaves: dict[tuple[Any, ...], tuple[Any, list[Finding]]] = field(default_factory=dict)
    extras_of: dict[tuple[Any, ...], list[Finding]] = field(default_factory=dict)
    explanations: dict[tuple[Any, ...], Finding] = field(default_factory=dict)
    others_of: dict[tuple[Any, ...], tuple[Any, Any, list[Finding]]] = field(default_factory=dict)
    last_args: dict[tuple[Any, ...], "_ArgsSeen"] = field(default_factory=dict)
    arg_index: ArgIndexes = field(default_factory=dict)
    block_shapes: dict[int, tuple[Block, int]] = field(default_factory=dict)
    shapes: dict[tuple[Any, ...], list[Finding]] = field(default_factory=dict)

    def intern(self, content: Any) -> int:
        return self.contents.setdefault(content, len(self.contents))

    def expect_id(self, expect: PointExpect) -> int:
        """Equal for two points whose expectations differ only in the point's name (pickled: `0.90`
        and `0.9` stay apart)."""
        fields = dict(expect.__dict__)
        fields["point"] = ""
        fields["roles"] = {role: tuple(topology.__dict__.values()) for role, topology in expect.roles.items()}  # faster than objects
        return self.intern(pickle.dumps(fields, protocol=5))

    def block_ids(self, blocks: Iterable[Block]) -> tuple[int, ...]:
        out = []
        for block in blocks:
            hit = self.blocks.get(id(block))
            if hit is None or hit[0] is not block:
                hit = self.blocks[id(block)] = (block, self.intern(_block_content(block)))
            out.append(hit[1])
        return tuple(out)

    def group(self, ctx: Ctx, prefix: KeyPath, value: RawYaml, inputs: tuple[int, ...],
              compute: Callable[[], list[Finding]] | None = None) -> list[Finding]:
        """The findings of the leaves under `prefix` (by `compute`, default: leaf by leaf), shared by
        the points where the same subtree meets equal `inputs`."""
        if not isinstance(value, (dict, list)):
            return _group_findings(ctx, prefix, value, self)
        key = (prefix, id(value), ctx.recipe.file, ctx.recipe.origins.get(prefix), inputs)
        hit = self.findings.get(key)
        if hit is None or hit[0] is not value:
            hit = self.findings[key] = (value, compute() if compute else _group_findings(ctx, prefix, value, self))
        return hit[1]

    def shape(self, ctx: Ctx, same_point: int, shared_labels: bool) -> list[Finding]:
        """The point's shape checks (`structure.check`), shared by the points equal in all that the
        checks read (`structure.block_shape`, `structure.recipe_shape`) and in their expectations,
        unless a check read a block's args through its scope. With `shared_labels` (blocks that share a
        role, which repeat its checks; equal shapes have the same roles) each finding once. A new list
        each time: the caller extends it."""
        shapes = []
        for block in ctx.blocks:
            hit = self.block_shapes.get(id(block))
            if hit is None or hit[0] is not block:
                index = ctx.args_by_key(block, block.kind == "worker")
                hit = self.block_shapes[id(block)] = (block, self.intern(structure.block_shape(block, index)))
            shapes.append(hit[1])
        key = (same_point, structure.recipe_shape(ctx), *shapes)
        found = self.shapes.get(key)
        if found is None:
            scopes = len(ctx.scopes_used)
            found = structure.check(ctx)
            if shared_labels:
                found = _unique(found)
            if not any(scope.read_args for scope in ctx.scopes_used[scopes:]):
                self.shapes[key] = found
        return list(found)

    def leaf(self, ctx: Ctx, path: KeyPath, facts: PathFacts, value: RawYaml, shown_in: tuple[Any, ...]) -> list[Finding]:
        """The findings of one role arg/env leaf, shared by the points where the same YAML value (same
        object, same line) meets the same shown values. A finding whose check looked at the block's
        scope is not shared."""
        where = ctx.where(path)
        mkey = (path, id(value), where, shown_in)
        hit = self.leaves.get(mkey)
        if hit is not None and hit[0] is value:
            return hit[1]
        used = len(ctx.scopes_used)
        found = _scalar_leaf(ctx, path, facts, value, where, shown_in)
        if len(ctx.scopes_used) == used:
            self.leaves[mkey] = (value, found)
        return found

    def args_section(self, ctx: Ctx, path: KeyPath, args: dict[str, RawYaml], blocks: list[Block], same_point: int) -> list[Finding]:
        """The findings of a role's args, against the last point seen with the same role, file,
        expectations, arg names and number of blocks: an arg whose YAML value (the same object, set at
        the same line) and whose values in the blocks are unchanged keeps its findings; the others are
        compared. An override changes a few args, so a point costs what its override changes."""
        names = tuple(args)
        paths, flags, facts = _args_layout(path, names)
        values = tuple(args.values())
        origins = tuple(map(ctx.recipe.origins.get, paths))
        indexes = [ctx.args_by_key(b, True) for b in blocks]
        ref_key = (path, ctx.recipe.file, same_point, len(blocks), names)
        ref: _ArgsSeen | None = self.last_args.get(ref_key)
        if ref is None:
            todo: Iterable[int] = range(len(values))
            found_by_arg: list[list[Finding] | None] = [None] * len(values)
        else:
            # the args to compare again: a new value or line, findings not to share, or new words in a block
            todo = [i for i, (value, seen, origin, seen_origin, kept) in enumerate(zip(values, ref.values, origins, ref.origins, ref.found))
                    if kept is None or value is not seen or origin is None or origin != seen_origin]
            changed = _changed_flags(indexes, ref.indexes)
            if changed:
                todo = sorted({*todo, *(i for i, flag in enumerate(flags) if flag in changed)})
            found_by_arg = list(ref.found)
        results = list(found_by_arg)
        for i in todo:
            value = values[i]
            used = len(ctx.scopes_used)
            if isinstance(value, (dict, list)):
                found = _group_findings(ctx, paths[i], value, self)
            else:           # `_group_findings` of a scalar, with what the section knows already
                origin = origins[i]
                where = where_text(origin) if origin is not None else ctx.where(paths[i])
                shown_in = _arg_shown(flags[i], indexes) if facts[i].kind == "arg" else _shown_in(ctx, facts[i], value)
                found = _scalar_leaf(ctx, paths[i], facts[i], value, where, shown_in)
            results[i] = found
            shared = len(ctx.scopes_used) == used and not isinstance(value, (dict, list))   # as in `leaf`
            found_by_arg[i] = found if shared else None
        out = list(chain.from_iterable(cast("list[list[Finding]]", results)))
        self.last_args[ref_key] = _ArgsSeen(values, origins, indexes, found_by_arg)
        return out

    def extras(self, ctx: Ctx, block: Block, same_point: int) -> list[Finding]:
        """What `block` adds to the recipe (a worker's: once per block, expectations and names of the
        role's args and env, which are all `structure.covered` reads of the recipe); each addition is
        explained once per name, words, role and expectations (`explained`)."""
        if block.kind != "worker":
            return self.other_extras(ctx, block)
        spec = (ctx.recipe.data.get("roles") or {}).get(block.role)
        args, env = (spec.get("args") or {}, spec.get("env") or {}) if isinstance(spec, dict) else (None, None)
        if not isinstance(args, dict) or not isinstance(env, dict):
            return _unique(_extras(ctx, block, structure.covered(ctx.recipe.data, block, ctx.blocks)))
        # `structure.covered` reads only the names of the role's args and env
        names = (tuple(args), tuple(env))
        key = (("extras", block.role), names, (same_point, *self.block_ids((block,))))
        hit = self.extras_of.get(key)
        if hit is None:
            covered = structure.covered(ctx.recipe.data, block, ctx.blocks)
            hit = _unique(_extras(ctx, block, covered, lambda *item: self.explained(ctx, block, same_point, *item)))
            self.extras_of[key] = hit
        return hit

    def other_extras(self, ctx: Ctx, block: Block) -> list[Finding]:
        """What a frontend or service block adds, shared by the points with the same expectations and
        non-worker blocks (`Ctx.others_key`) and the same `frontend` and `services` subtrees (all that
        `structure.covered` reads for such a block)."""
        data = ctx.recipe.data
        frontend, services = data.get("frontend"), data.get("services")
        key = (block.kind, self.block_ids((block,)), ctx.others_key, id(frontend), id(services))
        hit = self.others_of.get(key)
        if hit is None or hit[0] is not frontend or hit[1] is not services:
            found = _unique(_extras(ctx, block, structure.covered(data, block, ctx.blocks)))
            hit = self.others_of[key] = (frontend, services, found)
        return hit[2]

    def explained(self, ctx: Ctx, block: Block, same_point: int, section: str, name: str, words: Words) -> Finding:
        """The finding of one addition of a worker block, shared by the points where the role, the
        expectations, the name and the words are equal, unless its check read the block's other args."""
        key = (block.kind, block.role, block.node_rank, block.dp_rank, section, name, words, same_point)   # the DP checks read the ranks
        hit = self.explanations.get(key)
        if hit is None:
            scope = Scope(ctx.expect, block)
            hit = _explain_addition(ctx, block, section, name, words, scope)
            if not scope.read_args:
                self.explanations[key] = hit
        return hit


class _ArgsLayout(NamedTuple):
    """What a role's args section says by its arg names alone (`PointMemo.args_section`)."""

    paths: tuple[KeyPath, ...]
    flags: tuple[str, ...]              # each arg's flag key among a worker's args
    facts: tuple[PathFacts, ...]


@lru_cache(maxsize=4096)
def _args_layout(path: KeyPath, names: tuple[str, ...]) -> _ArgsLayout:
    """The layout of the args `names` at `path`, worked out once per process: the configs of a
    recipe family share their arg names (names are text: the YAML builder makes every key text)."""
    paths = tuple(path + (n,) for n in names)
    facts = tuple(map(path_facts, paths))
    return _ArgsLayout(paths, tuple(flag_key(str(n), True) for n in names), facts)


@dataclass(frozen=True)
class _ArgsSeen:
    """A role's args at the last point compared (`PointMemo.args_section`), by position in the args."""

    values: tuple[RawYaml, ...]
    origins: tuple[Any, ...]
    indexes: list[dict[str, tuple[Words, ...]]]   # per block: values by flag key
    found: list[list[Finding] | None]       # None: not to be shared


def _changed_flags(indexes: list[dict[str, tuple[Words, ...]]], before: list[dict[str, tuple[Words, ...]]]) -> set[str]:
    """The flag keys whose words differ between two points' blocks (by position)."""
    changed: set[str] = set()
    for new, old in zip(indexes, before):
        if new is not old:
            changed.update(k for k, _ in new.items() ^ old.items())
    return changed


def _block_content(block: Block) -> tuple[Any, ...]:
    return tuple(tuple(v.items()) if isinstance(v, dict) else v for v in block.__dict__.values())


# --- recipe leaves ---------------------------------------------------------------------------------

def _leaf(ctx: Ctx, leaf: Leaf, check: RawYaml | None) -> list[Finding]:
    name = str(check["check"]) if check else ""
    if name in ("arg", "env", "service_args"):
        return LEAF_HANDLERS[name](ctx, leaf, check)
    if leaf.rule is not None and (leaf.rule.cls in DROPPED or leaf.rule.cls == "prohibited"):
        return [_ruled(ctx, leaf, _leaf_role(ctx, leaf), "setting", leaf.dotted)]
    if check is None:
        return [ctx.finding(_leaf_role(ctx, leaf), "setting", leaf.dotted, "mismatch", detail="no check compares it with the cookbook",
                            recipe=word(leaf.value), reason="add a recipe_checks entry to diff/synthesized.yaml or a policy rule",
                            path=leaf.dotted, where=leaf.where)]
    return LEAF_HANDLERS[name](ctx, leaf, check)


def _leaf_role(ctx: Ctx, leaf: Leaf) -> str:
    head = str(leaf.path[0])
    if head == "roles" and len(leaf.path) > 1:
        return str(leaf.path[1])
    if head == "services" and len(leaf.path) > 1 and isinstance(leaf.path[1], int):
        return structure.service_kind(ctx.recipe.data, leaf.path[1])
    return "frontend" if head == "frontend" else "job"


def _ruled(ctx: Ctx, leaf: Leaf, role: str, kind: str, item: str) -> Finding:
    """A leaf the policy drops (its class, `excluded`) or prohibits (class `prohibited`: the run used a
    setting no cookbook may publish, which fails the gate whether the cookbook shows it or not)."""
    rule = leaf.rule
    assert rule is not None
    prohibited = rule.cls == "prohibited"
    return ctx.finding(role, kind, item, rule.cls, detail="prohibited by the policy" if prohibited else "excluded",
                       recipe=_show_value(leaf.value), reason=rule.reason, rule=rule.text, path=leaf.dotted, where=leaf.where)


def _show_value(value: RawYaml) -> str:
    words = shown(recipe_words(value))
    return "null" if words is None else words


def _targets(ctx: Ctx, leaf: Leaf) -> tuple[list[Block], bool, str]:
    """The published blocks a leaf belongs to, whether they are workers, and the role label."""
    head = str(leaf.path[0])
    if head == "roles":
        role = str(leaf.path[1])
        return ctx.role_blocks(role), True, role
    if head == "frontend":
        blocks = [b for b in ctx.blocks if b.kind in structure.FRONTEND_KINDS]
        return blocks, False, role_label(blocks[0]) if blocks else "frontend"
    if head == "engine":        # a v1 recipe's mooncake_kv_store: its master's extra args, else every worker's env
        if leaf.path[2:3] == ("master_extra_args",):
            return [b for b in ctx.blocks if b.kind == "mooncake-master"], False, "mooncake-master"
        return [b for b in ctx.blocks if b.kind == "worker"], True, "workers"
    blocks = structure.service_blocks(ctx.recipe.data, int(leaf.path[1]), ctx.blocks)
    return blocks, False, blocks[0].kind if blocks else structure.service_kind(ctx.recipe.data, int(leaf.path[1]))


def _arg_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    blocks, worker, role = _targets(ctx, leaf)
    flag = path_facts(leaf.path).flag
    want = recipe_words(leaf.value)
    if not blocks:
        return _without_blocks(ctx, leaf, role, "arg", flag)
    out = []
    for block in blocks:
        got = ctx.args_by_key(block, worker).get(flag_key(flag, worker), ())
        out.append(_repeated(ctx, leaf, role, flag, want, got) or _judge(ctx, leaf, role, "arg", flag, want, got, block))
    return out


def _repeated(ctx: Ctx, leaf: Leaf, role: str, flag: str, want: Words | None, got: Sequence[Words]) -> Finding | None:
    """A flag the recipe sets once but the cookbook gives several times with different values: the
    parser keeps one of them (argparse the last), so the cookbook's value is not the recipe's."""
    if len(got) < 2 or all(words_equal(got[0], g) for g in got[1:]):
        return None
    return ctx.finding(role, "arg", flag, "mismatch", detail=f"{DIFFERENT}: given {len(got)} times with different values",
                       recipe=shown(want), cookbook=" | ".join(str(shown(g)) for g in got), path=leaf.dotted, where=leaf.where)


def _env_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    blocks, _, role = _targets(ctx, leaf)
    want = None if leaf.value is None else (word(leaf.value),)
    if not blocks:
        return _without_blocks(ctx, leaf, role, "env", leaf.name)
    out = []
    for block in blocks:
        got: list[Words] = [(block.env[leaf.name],)] if leaf.name in block.env else []
        out.append(_judge(ctx, leaf, role, "env", leaf.name, want, got))
    return out


def _without_blocks(ctx: Ctx, leaf: Leaf, role: str, kind: str, item: str) -> list[Finding]:
    """A leaf whose process the cookbook does not show: the block-level finding says so already."""
    if leaf.rule is not None and leaf.rule.cls in DROPPED:
        return [_ruled(ctx, leaf, role, kind, item)]
    return [ctx.finding(role, kind, item, "mismatch", detail=MISSING, recipe=_show_value(leaf.value),
                        reason=f"the cookbook has no {role} process", path=leaf.dotted, where=leaf.where)]


def _judge(ctx: Ctx, leaf: Leaf, role: str, kind: str, item: str, want: Words | None,
           got: Sequence[Words], checked: Block | None = None) -> Finding:
    """The class of one recipe arg/env in one block, from the policy and what the block shows; a
    placeholder the cookbook fills in must pass the `synthesized.yaml` check of its flag in `checked`."""
    rule = leaf.rule
    cls = rule.cls if rule else "unclassified"
    base = dict(recipe=shown(want), cookbook=shown(got[0]) if got else None, path=leaf.dotted, where=leaf.where,
                rule=rule.text if rule else "", reason=rule.reason if rule else "no policy rule: published")
    if cls == "prohibited":
        return _ruled(ctx, leaf, role, kind, item)
    if cls in DROPPED:
        return _dropped(ctx, role, kind, item, cls, want, got, base)
    if cls == "placeholder":
        if rule is not None and rule.replacement is not None:
            want = (rule.replacement,)
            base["recipe"] = f"{shown(recipe_words(leaf.value))} -> {rule.replacement}"
        elif not got:
            return ctx.finding(role, kind, item, "placeholder", detail="left to the reader", **base)
        else:
            problem = check_arg(checked.kind, item, got[0], ctx.scope(checked)) if checked is not None else None
            if problem is None:
                return ctx.finding(role, kind, item, "placeholder", detail="site-specific value", **base)
            return ctx.finding(role, kind, item, "mismatch", detail=f"{DIFFERENT}: {problem.reason}", **base)
    return _compare(ctx, role, kind, item, "placeholder" if cls == "placeholder" else "match", want, got, base)


def _dropped(ctx: Ctx, role: str, kind: str, item: str, cls: str, want: Words | None, got: Sequence[Words], base: dict[str, Any]) -> Finding:
    if not got:
        return ctx.finding(role, kind, item, cls, detail="excluded", **base)
    if want is not None and any(words_equal(want, g) for g in got):
        base["reason"] = f"published although the policy says {cls}: {base['reason']}"
        return ctx.finding(role, kind, item, "match", detail="same value", **base)
    return ctx.finding(role, kind, item, "mismatch", detail=DIFFERENT, **base)


def _compare(ctx: Ctx, role: str, kind: str, item: str, ok: str, want: Words | None, got: Sequence[Words], base: dict[str, Any]) -> Finding:
    if want is None:
        detail, cls = ("unset in the recipe", ok) if not got else (EXTRA, "mismatch")
    elif not got:
        detail, cls = MISSING, "mismatch"
    elif any(words_equal(want, g) for g in got):
        detail, cls = "same value", ok
    elif item in table()["runner_dependent"]:      # sized to the runner by the benchmark script: shown, its size the reader's
        detail, cls, base = "runner-dependent value", "placeholder", {**base, "reason": table()["runner_dependent"][item]}
    elif item in table()["agree_between_roles"]:   # the cookbook's own value; `structure` checks the roles agree on it
        detail, cls, base = "the cookbook's own value", "placeholder", {**base, "reason": table()["agree_between_roles"][item]}
    else:
        detail, cls = DIFFERENT, "mismatch"
    return ctx.finding(role, kind, item, cls, detail=detail, **base)


def _service_args_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    blocks, _, role = _targets(ctx, leaf)
    out: list[Finding] = []
    for arg in structure.service_args(leaf.value):
        if not blocks:
            out.extend(_without_blocks(ctx, leaf, role, "arg", arg[0]))
        for block in blocks:
            got = structure.service_arg_values(block, arg[0])
            out.append(_judge(ctx, leaf, role, "arg", arg[0], tuple(arg[1:]), got))
    return out


def _preamble_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    blocks, _, role = _targets(ctx, leaf)
    want = structure.lines_of(leaf.value)
    out = []
    for block in blocks:
        same = [line.strip() for line in block.preamble] == list(want)
        out.append(ctx.finding(role, "setting", "preamble", "match" if same else "mismatch",
                               detail="same lines" if same else DIFFERENT, recipe=" / ".join(want),
                               cookbook=" / ".join(block.preamble) or None, path=leaf.dotted, where=leaf.where))
    return out


def _file_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    cls, detail, role = structure.file_setting(ctx.expect, leaf.path, leaf.value, ctx.blocks)
    return [ctx.finding(role, "file", leaf.name, cls, detail=detail, recipe=word(leaf.value), reason=detail, path=leaf.dotted, where=leaf.where)]


def _options_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    """A role's LLM-API option (`roles.<role>.options.<key>...`) against the options file its worker
    command names (`check["flag"]`), key path by key path: one finding per option and worker block."""
    blocks, _, role = _targets(ctx, leaf)
    item = ".".join(map(str, leaf.path[3:]))
    if not blocks:
        return _without_blocks(ctx, leaf, role, "option", item)
    out = []
    flags = check["flag"] if isinstance(check["flag"], list) else [check["flag"]]
    for block in blocks:
        names = [a[1] for a in block.args if a[0] in flags and len(a) > 1]
        name = names[-1] if names else ""      # argparse keeps the last of a repeated flag
        found, got = _option_in(_options_file(name, block.files.get(name)), leaf.path[3:])
        same = found and got == leaf.value and type(got) is type(leaf.value) or (isinstance(got, float) and got == leaf.value)
        detail = "same" if same else DIFFERENT if found else f"{MISSING} from {name or 'the command (no options file)'}"
        out.append(ctx.finding(role, "option", item, "match" if same else "mismatch", detail=detail, recipe=_show_value(leaf.value),
                               cookbook=_show_value(got) if found else None, path=leaf.dotted, where=leaf.where))
    return out


def _store_config_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    """A key of mooncake_kv_store's `store_config`: in the JSON file each vLLM worker reads (srtctl writes it)."""
    blocks, _, role = _targets(ctx, leaf)
    name, key = str(check["file"]), str(leaf.path[-1])
    if not blocks:
        return _without_blocks(ctx, leaf, role, "option", key)
    out = []
    for block in blocks:
        data = _options_file(name, block.files.get(name))
        present, got = _option_in(data, (key,))
        same = present and got == leaf.value
        out.append(ctx.finding(role_label(block), "option", f"{name} {key}", "match" if same else "mismatch",
                               detail="same value" if same else DIFFERENT if present else MISSING, recipe=_show_value(leaf.value),
                               cookbook=_show_value(got) if present else None, path=leaf.dotted, where=leaf.where))
    return out


def _options_file_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    """`roles.<role>.options_file.{flag,name,text}` (trtllm-serve started by a benchmark script): the
    worker command names the file with that flag, and publishes it with the text the script wrote."""
    blocks, _, role = _targets(ctx, leaf)
    if not blocks:
        return _without_blocks(ctx, leaf, role, "setting", leaf.dotted)
    spec = (ctx.recipe.data.get("roles") or {}).get(role) or {}
    found = spec.get("options_file")
    written: dict[str, RawYaml] = found if isinstance(found, dict) else {}
    out = []
    for block in blocks:
        named = [a[1] for a in block.args if a[0] == written.get("flag") and len(a) > 1]
        got: RawYaml = {"flag": written.get("flag") if named else None, "name": named[-1] if named else None,
                        "text": block.files.get(named[-1]) if named else None}[leaf.name]
        same = got == leaf.value
        out.append(ctx.finding(role, "setting", leaf.dotted, "match" if same else "mismatch", detail="same" if same else
                               DIFFERENT if got is not None else MISSING, recipe=word(leaf.value), cookbook=None if got is None else word(got),
                               path=leaf.dotted, where=leaf.where))
    return out


def _launcher_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    """`roles.<role>.launcher` (the `mpirun ...` a benchmark script starts trtllm-serve under): the start of the worker command."""
    blocks, _, role = _targets(ctx, leaf)
    want = [word(w) for w in leaf.value] if isinstance(leaf.value, list) else [word(leaf.value)]
    out = []
    for block in blocks:
        same = shlex.split(block.cmd)[:len(want)] == want
        out.append(ctx.finding(role, "setting", leaf.dotted, "match" if same else "mismatch", detail="in the command" if same else DIFFERENT, recipe=shlex.join(want), cookbook=block.cmd, path=leaf.dotted, where=leaf.where))
    return out or _without_blocks(ctx, leaf, role, "setting", leaf.dotted)


def _install_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    """`dynamo.source.*`: its value in the install steps (preamble) of every Dynamo process."""
    blocks = [b for b in ctx.blocks if b.kind in ("worker", "dynamo-frontend")]
    want = word(leaf.value)
    out = []
    for block in blocks:
        same = any(want in line for line in block.preamble)
        out.append(ctx.finding(role_label(block), "setting", leaf.dotted, "match" if same else "mismatch",
                               detail="in the install step" if same else f"{MISSING} from the install step", recipe=want,
                               cookbook=" / ".join(block.preamble) or None, path=leaf.dotted, where=leaf.where))
    return out


@lru_cache(maxsize=64)
def _options_file(name: str, text: str | None) -> RawYaml:
    return parse_yaml(text, name).data if text is not None else None


def _option_in(data: RawYaml, keys: KeyPath) -> tuple[bool, RawYaml]:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return False, None
        data = data[key]
    return True, data


def _structure_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    return []  # checked once per point by `structure.check`, which names this leaf


def _unverified_leaf(ctx: Ctx, leaf: Leaf, check: RawYaml) -> list[Finding]:
    return [ctx.finding(_leaf_role(ctx, leaf), "setting", leaf.dotted, "unverified", detail="not in any command",
                        recipe=word(leaf.value), reason=str(check.get("reason", "")), path=leaf.dotted, where=leaf.where)]


LEAF_HANDLERS: dict[str, Callable[[Ctx, Leaf, RawYaml], list[Finding]]] = {
    "arg": _arg_leaf,
    "env": _env_leaf,
    "service_args": _service_args_leaf,
    "service_preamble": _preamble_leaf,
    "nats_payload": _file_leaf,
    "nginx": _file_leaf,
    "options": _options_leaf,
    "options_file": _options_file_leaf,
    "store_config": _store_config_leaf,
    "launcher": _launcher_leaf,
    "dynamo_install": _install_leaf,
    "structure": _structure_leaf,
    "unverified": _unverified_leaf,
}


# --- what the cookbook adds -------------------------------------------------------------------------

Addition = Callable[[str, str, Words], Finding]   # (section, name, words) -> its finding


def _extras(ctx: Ctx, block: Block, covered: tuple[set[str], set[str]], addition: Addition | None = None) -> list[Finding]:
    """The args and env of `block` that no recipe leaf covers (`covered`: flag keys, env names), each
    explained or a mismatch (by `addition`; default: `_explain_addition` in the block's scope)."""
    find: Addition = addition or (lambda section, name, words: _explain_addition(ctx, block, section, name, words, ctx.scope(block)))
    out: list[Finding] = []
    covered_args, covered_env = covered
    worker = block.kind == "worker"
    for arg in block.args:
        if flag_key(arg[0], worker) not in covered_args:
            out.append(find("args", arg[0], tuple(arg[1:])))
    for name, value in block.env.items():
        if name not in covered_env:
            out.append(find("env", name, (value,)))
    return out


def _explain_addition(ctx: Ctx, block: Block, section: str, name: str, words: Words, scope: Scope) -> Finding:
    """One arg or env entry the cookbook adds: the cluster's env (a worker's), or `synthesized.yaml`."""
    verdict: Explanation | Miss
    if section == "env" and block.kind == "worker" and name in ctx.expect.cluster_env:
        want, reason = ctx.expect.cluster_env[name]
        verdict = (Explanation("cluster-provided", reason, "policy clusters")
                   if words_equal((want,), words) else Miss(DIFFERENT, f"the cluster exports {name}={want}"))
    else:
        verdict = explain(section, block.kind, name, words, scope)
    role, kind = role_label(block), "arg" if section == "args" else "env"
    if isinstance(verdict, Explanation):
        return ctx.finding(role, kind, name, verdict.cls, detail="added by the cookbook", cookbook=shown(words),
                           reason=verdict.reason, rule=verdict.rule, path=verdict.path)
    return ctx.finding(role, kind, name, "mismatch", detail=verdict.detail, cookbook=shown(words), reason=verdict.reason,
                       path=verdict.path)


__all__ = ["compare_point", "point_findings", "stamped"]
