"""The cookbook as data: pages -> cells -> points, each point with its rendered deployment. No I/O."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from ..render.model import Deployment
from .manifest import HistoryItem, Status


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Provenance(_Frozen):
    pr: int | None
    pr_url: str | None
    commit: str | None             # None: a whole-checkout build of a folder that is not a git work tree
    commit_url: str | None
    run: int | None
    attempt: int
    run_url: str | None
    status: Status
    date: dt.date | None
    recipe: str
    changelog_pr: int | None = None  # latest perf-changelog PR naming the key, when it differs
    dashboard: str | None = None     # the run's results page (the manifest's `dashboard`)
    history: tuple[HistoryItem, ...] = ()   # every perf-changelog entry naming the config (whole-checkout builds)


class Exclusion(_Frozen):
    path: str
    cls: str
    reason: str
    value: str
    points: tuple[str, ...]


class Point(_Frozen):
    id: str               # row slug / c<conc>, unique in the config
    label: str            # c<conc>
    concs: tuple[int, ...]
    recipe: str           # recipe file (checkout-relative)
    override: str | None
    deployment: Deployment
    metrics: dict[str, float] = Field(default_factory=dict)
    golden_al: str | None = None
    row: int | None = None  # index of its master search-space row (what an AgentX module's `item` names)


class Variant(_Frozen):
    """A derived router or KV-tier variant of a cell's point: never run, always marked `derived`."""

    router: str
    kv: str
    point: str
    deployment: Deployment


class Cell(_Frozen):
    id: str               # <config key>#<k>
    slug: str             # anchor-safe id
    config_key: str
    hw: str
    model: str
    label: str
    detail: str
    gpus: int
    nodes: int
    cpu_nodes: int = 0
    image: str
    image_digest: str | None
    image_commit: str | None
    router: str           # dynamo | sglang (the router the run used)
    kv: str               # none | hicache | mooncake (the tier the run used)
    provenance: Provenance
    points: tuple[Point, ...]
    exclusions: tuple[Exclusion, ...]
    disclosures: tuple[str, ...]
    notes: tuple[str, ...]
    variants: tuple[Variant, ...] = ()


class Page(_Frozen):
    model: str
    slug: str
    title: str
    hardware: tuple[str, ...]
    cells: tuple[Cell, ...]


class Refused(_Frozen):
    """A config (point None) or point of a whole-checkout build that could not be rendered, and why."""

    config: str
    point: str | None
    reason: str

    def __str__(self) -> str:
        return f"{self.config}{' ' + self.point if self.point else ''}: {self.reason}"


class Cookbook(_Frozen):
    title: str
    repo: str
    generated_on: dt.date | None
    pages: tuple[Page, ...]
    warnings: tuple[str, ...] = ()
    refused: tuple[Refused, ...] = ()   # whole-checkout builds: each config or point not published, with its located reason
