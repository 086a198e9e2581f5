"""Stage 0 of the diff (data): the values `cookbookgen diff` works with: published points read from a cookbook artifact, and
findings (one compared setting each). No I/O. What each finding class and unpaired reason means is
in one table, `classes.yaml` (`cookbookgen diff --explain CLASS`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Literal, get_args

from ..render.model import Block

FindingClass = Literal[
    "mismatch", "prohibited", "match", "harness-only", "default-equivalent", "placeholder", "cluster-provided", "unverified", "derived",
    "shadowed"
]
CLASSES: tuple[FindingClass, ...] = get_args(FindingClass)     # in the order reports count them
FAILING: frozenset[str] = frozenset(("mismatch", "prohibited"))
"""The classes that fail a diff: a difference from the recipe, and a setting the policy prohibits."""
UnpairedReason = Literal["commit-missing", "object-missing", "no-master-entry", "recipe-missing", "framework-unsupported", "selector-missing",
                         "no-point-paired", "recipe-refused", "not-rendered"]
"""Why a published cell was not checked (meanings in `classes.yaml`, `cookbookgen diff --explain`)."""
MISSING = "missing from the cookbook"
EXTRA = "extra in the cookbook"
DIFFERENT = "different value"


@dataclass(frozen=True)
class Finding:
    """One compared setting of one role of one point.

    `role` is the process the setting belongs to (prefill, decode, agg, frontend, router, etcd, nats,
    nginx, mooncake-master, mooncake-store), `job` for recipe sections outside any process, or
    `cell`/`point` for findings about the pairing itself. `kind`: arg, env, topology, block, file, claim,
    image, point, variant, setting or log.
    """

    config: str
    point: str
    role: str
    kind: str
    item: str
    cls: FindingClass
    detail: str = ""
    recipe: str | None = None
    cookbook: str | None = None
    reason: str = ""
    rule: str = ""
    path: str = ""
    where: str = ""

    @property
    def is_mismatch(self) -> bool:
        """Whether the finding fails the run (a mismatch or a prohibited setting): what reports list."""
        return self.cls in FAILING

    def to_json(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass(frozen=True)
class PublishedPoint:
    """One point as a cookbook publishes it: the blocks a reader copies, plus what pairs it with a checkout.

    `point_id` is the checkout's point id (`tp4/c16`) when the artifact records it (our own JSON);
    AgentX modules pair by `override`, `recipe` and `concs` instead.
    """

    config: str
    cell: str
    concs: tuple[int, ...]
    blocks: tuple[Block, ...]
    point_id: str | None = None
    override: str | None = None
    recipe: str | None = None
    image: str | None = None
    router: str | None = None
    kv: str | None = None
    item: int | None = None
    gpus: int | None = None
    title: str | None = None
    install: tuple[str, ...] | None = None
    commit: str | None = None
    hardware: str | None = None

    @property
    def label(self) -> str:
        return " / ".join(f"c{c}" for c in self.concs) or self.point_id or self.cell


@dataclass(frozen=True)
class Variant:
    """A router or KV-tier combination a cookbook offers but nobody ran."""

    config: str
    cell: str
    point: str
    router: str
    kv: str


@dataclass(frozen=True)
class Published:
    """Everything read from one cookbook artifact."""

    source: str
    kind: str
    points: tuple[PublishedPoint, ...]
    variants: tuple[Variant, ...] = ()
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()     # what the artifact contradicts itself with (a site's copyable forms)
    refused: tuple[tuple[str, str | None, str], ...] = ()    # (config, point or None, reason) a whole-checkout build could not render


@dataclass(frozen=True)
class CellState:
    """How one published cell ended: `checked` (its findings are its points') or `unpaired` with one
    `reason` and the path or key involved (`detail`); `tree` is where its inputs were read."""

    cookbook: str
    config: str
    cell: str
    state: Literal["checked", "unpaired"]
    reason: UnpairedReason | None = None
    detail: str = ""
    commit: str = ""
    tree: str = ""
    recipe: str = ""
    points: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"cell": self.cell, "config": self.config, "state": self.state, "reason": self.reason, "detail": self.detail,
                "commit": self.commit or None, "tree": self.tree, "recipe": self.recipe or None, "points": list(self.points)}


@dataclass(frozen=True)
class Tally:
    """What a verdict counts, over one cookbook or several (`+`)."""

    cells: tuple[CellState, ...] = ()
    points: int = 0
    classes: Counter[str] = field(default_factory=Counter)

    def __add__(self, other: "Tally") -> "Tally":
        return Tally(self.cells + other.cells, self.points + other.points, self.classes + other.classes)

    @property
    def unpaired(self) -> list[CellState]:
        return [c for c in self.cells if c.state == "unpaired"]

    def verdict(self, allow_unpaired: bool) -> tuple[int, str]:
        """The exit status and why: 1 on any mismatch, any unpaired cell (unless allowed) or nothing checked."""
        mismatches, prohibited, unpaired = self.classes["mismatch"], self.classes["prohibited"], len(self.unpaired)
        why = ([f"{mismatches} mismatch(es)"] * bool(mismatches) + [f"{prohibited} prohibited setting(s)"] * bool(prohibited)
               + [f"{unpaired} unpaired cell(s)"] * (unpaired > 0 and not allow_unpaired))
        mismatches += prohibited
        if not self.points and not mismatches:
            why.append("no point was checked")
        if why:
            return 1, ", ".join(why)
        return 0, "parity" + (f" ({unpaired} unpaired cell(s) allowed by --allow-unpaired)" if unpaired else "")


@dataclass(frozen=True)
class Source:
    """A cookbook's published points, config by config: `points(config)` gives the points and variants
    of one config (a manifest renders them then; other artifacts are read whole first)."""

    name: str
    kind: str
    configs: tuple[str, ...]
    points: Callable[[str], Published]
    notes: tuple[str, ...] = ()
    cell: str | None = None
    rendered_here: bool = False     # a manifest's points, rendered by this cookbookgen: every flag is written `--flag value`


def whole(published: Published) -> Source:
    """The source of a cookbook read whole (a module, cookbook JSON or site)."""
    by_config: dict[str, list[PublishedPoint]] = {}
    for point in published.points:
        by_config.setdefault(point.config, []).append(point)

    def points(config: str) -> Published:
        variants = tuple(v for v in published.variants if v.config == config)
        found = tuple(f for f in published.findings if f.config == config)
        refused = tuple(r for r in published.refused if r[0] == config)
        return Published(published.source, published.kind, tuple(by_config.get(config, ())), variants, findings=found, refused=refused)
    configs = tuple(dict.fromkeys([*by_config, *(r[0] for r in published.refused)]))
    return Source(published.source, published.kind, configs, points, published.notes)
