"""The values render produces: `Block` (one command, maybe run on several nodes) and `Deployment`.

No I/O. A block's args are ordered `(flag, *values)` tuples; a bare switch is `(flag,)`.
Quoting and layout live in `shell.py` only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..policy.rules import Setting

BlockKind = Literal[
    "etcd", "nats", "nginx", "dynamo-frontend", "sglang-router", "vllm-router", "smg", "atomesh", "mooncake-master", "mooncake-store", "worker"
]
Role = Literal["agg", "prefill", "decode"]
ROLES: tuple[Role, ...] = ("prefill", "decode", "agg")
Arg = tuple[str, ...]


class Block(BaseModel):
    """One process command. `workers`/`count`/`count_nodes` say how many copies run, and where."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: BlockKind
    role: Role | None = None
    title: str
    cmd: str
    args: tuple[Arg, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    workers: int | None = None
    nodes_per_worker: int | None = None
    idle_nodes: int | None = None   # nodes the role reserves beyond those its workers fill (srtctl v1.0.68's packing)
    node_rank: int | None = None    # the block is the process on this node of each of its workers (the other nodes' are other blocks)
    dp_rank: int | None = None      # the process of this data-parallel rank of each of its workers (srtctl's per_gpu layout; other blocks run the others)
    count: int | None = None
    count_nodes: int | None = None
    gpu_pinning: tuple[tuple[str, ...], ...] | None = None
    ports: tuple[str, ...] | None = None
    preamble: tuple[str, ...] = ()
    files: dict[str, str] = Field(default_factory=dict)
    where: str = ""

    def arg_values(self, flag: str) -> list[Arg]:
        return [a for a in self.args if a[0] == flag]

    def to_json(self) -> dict[str, object]:
        """The `render --format json` shape, in field order: args as lists; unset fields, and an empty
        preamble or files, left out."""
        empty = {name for name in ("preamble", "files") if not getattr(self, name)}
        return self.model_dump(mode="json", exclude_none=True, exclude=empty)


class Deployment(BaseModel):
    """Everything a reader runs for one point, in launch order, plus the settings report."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blocks: tuple[Block, ...]
    settings: tuple[Setting, ...] = ()
    model: str
    image: str = ""
    gpus: int = 0
    nodes: int = 0          # GPU nodes
    cpu_nodes: int = 0      # a dedicated node for the frontend, etcd and NATS, when the recipe places them so
