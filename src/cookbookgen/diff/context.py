"""Stage 4 of the diff (compare): the context of one point under comparison (`Ctx`): its expectations
(`expect`), its effective recipe, the published blocks and the policy, with the per-block indexes the leaf
comparison (`compare`) and the once-per-point shape checks (`structure`) share. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..policy.rules import Policy
from ..recipes.bundle import EffectiveRecipe
from ..recipes.load import KeyPath
from ..render.model import Block
from .expect import PointExpect
from .explain import Scope
from .model import Finding, PublishedPoint
from .words import Words, flag_key


@dataclass(frozen=True)
class Ctx:
    """One point under comparison."""

    expect: PointExpect
    recipe: EffectiveRecipe
    published: PublishedPoint
    policy: Policy
    arg_index: "ArgIndexes" = field(default_factory=dict)
    scopes_used: list[Scope] = field(default_factory=list)   # the Scopes of blocks that checks looked at
    workers: dict[str, list[Block]] = field(default_factory=dict)  # worker blocks by role
    others_key: tuple[int, ...] = ()   # the expectations and the non-worker blocks, interned (`PointMemo`)

    @property
    def blocks(self) -> tuple[Block, ...]:
        return self.published.blocks

    def args_by_key(self, block: Block, worker: bool) -> dict[str, tuple[Words, ...]]:
        """The block's arg values grouped by flag key, built once per block (leaves look them up);
        tuples, so two blocks' indexes compare as sets (`_changed_flags`)."""
        key = (id(block), worker)
        hit = self.arg_index.get(key)
        if hit is None or hit[0] is not block:
            hit = self.arg_index[key] = (block, _index_args(block, worker))
        return hit[1]

    def finding(self, role: str, kind: str, item: str, cls: str, **rest: Any) -> Finding:
        return Finding(self.expect.config, self.expect.point, role, kind, item, cls, **rest)  # type: ignore[arg-type]

    def scope(self, block: Block) -> Scope:
        scope = Scope(self.expect, block)
        self.scopes_used.append(scope)
        return scope

    def role_blocks(self, role: str) -> list[Block]:
        return self.workers.get(role, [])

    def where(self, path: KeyPath) -> str:
        """`file:line` of the setting (as `recipe.problem(path)` locates it), or the file alone."""
        origins = self.recipe.origins
        p = path if type(path) is tuple else tuple(path)
        found = origins.get(p)
        while found is None and p:
            p = p[:-1]
            found = origins.get(p)
        return where_text(found if found is not None else (self.recipe.file, 0))


ArgIndex = dict[str, tuple[Words, ...]]          # a block's arg values by flag key
ArgIndexes = dict[tuple[int, bool], tuple[Block, ArgIndex]]                # by the block's id and whether it is a worker


def _index_args(block: Block, worker: bool) -> ArgIndex:
    """`Ctx.args_by_key` of `block`: its args' words by flag key, in the args' order; a flag given
    more than once keeps all its values, in order."""
    index: ArgIndex = {}
    for arg in block.args:
        key = flag_key(arg[0], worker)
        index[key] = (*index.get(key, ()), arg[1:])
    return index


@lru_cache(maxsize=65536)
def where_text(origin: tuple[str, int]) -> str:
    """`file:line` (the file alone without a line), one string per origin (report keys hash it once)."""
    file, line = origin
    return f"{file}:{line}" if line else file
