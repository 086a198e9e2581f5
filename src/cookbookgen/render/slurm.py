"""The whole deployment as one Slurm batch job (`render --format slurm`, the pages' sbatch download). No I/O.

The job gets `total` nodes; `scontrol show hostnames "$SLURM_JOB_NODELIST"` names them, node 0 first.
Where each process runs follows the renderer's layout (`render.layout`) as srtctl places it:
- with a dedicated CPU node (`Deployment.cpu_nodes`), node 0 runs etcd, NATS and the frontend and the
  workers start on node 1; otherwise they share node 0, the first worker node;
- workers take nodes role by role (prefill, decode, agg): a worker of several nodes takes that many in a
  row (NODE_RANK 0 first; a block of one node of them, `node_rank`, runs on that node of each); workers pinned to GPUs take one node per copy of their GPU slot; a role whose
  first GPU slot does not start at GPU 0 shares the last node of the role before it (`nodes: 0`);
- nginx runs on the head node (the first worker node) and frontend i on worker node i + 1 (srtctl's
  frontend stage); a Mooncake store on each node of the role its block names; every other service on node 0.
Every process is started with `srun --overlap --nodes=1 --nodelist=<node>` (in the recipe's container
through pyxis when the deployment names an image) running its launch-script body (`render.shell`), in the
renderer's launch order, except that a process that reaches `$PLACEHOLDER:port` of another process
starts after that process and only once the port accepts connections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .model import Block, Deployment
from .shell import block_comment, command_lines, comment_line, heredoc, placeholders_in, processes, quote, safe_text

# `$NAME:port` or `${NAME}:port`: a process reaching a port of the process that NAME places
_REACHES = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)\}?:(\d+)")
_SERVICE_PLACEHOLDERS = {"etcd": "ETCD_IP", "nats": "NATS_IP", "mooncake-master": "MOONCAKE_MASTER_IP"}
_LOCAL = re.compile(r"//127\.0\.0\.1:(\d+)")
_HEAD = re.compile(r"(AGG|PREFILL|DECODE)_(\d+)_HEAD_IP")
_FRONTEND = re.compile(r"FRONTEND_(\d+)_IP")


@dataclass(frozen=True)
class Placed:
    """One process of the job: its launch-script name, block, node of the job, NODE_RANK, and the node
    of its worker's NODE_RANK 0 (workers only)."""

    name: str
    block: int
    node: int
    rank: int | None
    head: int | None


@dataclass(frozen=True)
class Job:
    nodes: int
    procs: tuple[Placed, ...]             # in start order
    node_of: dict[str, int]                # placeholder -> node, for every IP placeholder a process serves
    waits: dict[str, tuple[tuple[str, int, int], ...]]   # process name -> (process, node, port) it waits for first


def _copies(block: Block) -> int:
    return (block.workers or 1) * (block.count or 1) * (block.count_nodes or 1)


def _first_gpu(block: Block) -> int | None:
    pins = block.env.get("CUDA_VISIBLE_DEVICES")
    return int(pins.split(",")[0]) if pins and pins.split(",")[0].isdigit() else None


def _worker_nodes(blocks: list[Block], first: int) -> tuple[dict[int, list[list[int]]], dict[str, list[int]], int]:
    """Per worker block: per copy, its nodes (NODE_RANK order); per role, its nodes; the next free node."""
    out: dict[int, list[list[int]]] = {}
    role_nodes: dict[str, list[int]] = {}
    free = first
    previous_last: int | None = None
    for role in dict.fromkeys(b.role for b in blocks if b.kind == "worker" and b.role):
        indexed = [(i, b) for i, b in enumerate(blocks) if b.kind == "worker" and b.role == role]
        sharing = previous_last is not None and _first_gpu(indexed[0][1]) not in (None, 0)
        used = 0
        head: list[list[int]] = []
        for i, block in indexed:
            npw = block.nodes_per_worker or 1
            if block.node_rank:         # another node of the workers of the block before it (their nodes)
                out[i] = head
                continue
            if sharing and _first_gpu(block) not in (None, 0):
                out[i] = [[previous_last] for _ in range(_copies(block))]   # type: ignore[list-item]
                continue
            sharing = False
            out[i] = head = [[free + copy * npw + r for r in range(npw)] for copy in range(_copies(block))]
            used = max(used, _copies(block) * npw)
        role_nodes[role] = sorted({n for i, _ in indexed for copy in out[i] for n in copy})
        free += used
        previous_last = free - 1 if used else previous_last
    return out, role_nodes, free


def _service_nodes(block: Block, blocks: list[Block], first: int, role_nodes: dict[str, list[int]]) -> list[int]:
    """The node of each copy of a non-worker block."""
    n = _copies(block)
    if block.kind == "nginx":
        return [first] * n
    if block.kind == "dynamo-frontend" and any(b.kind == "nginx" for b in blocks):
        return [first + 1 + copy for copy in range(n)]
    if block.kind == "sglang-router" and any("127.0.0.1" in w for a in block.args for w in a):
        agg = role_nodes.get("agg") or [first]
        return [agg[0]] * n
    if block.kind == "mooncake-store":
        role = next((r for r in role_nodes if f" {r} nodes" in block.where), None)
        if role is not None:
            return [role_nodes[role][copy % len(role_nodes[role])] for copy in range(n)]
    return [0] * n


def _port_of(block: Block) -> str | None:
    return next((a[1] for a in block.args if a[0] in ("--port", "--http-port", "--server-port") and len(a) > 1), None)


def _text(block: Block) -> str:
    return "\n".join([*block.env.values(), *(w for a in block.args for w in a), *block.files.values(), *block.preamble])


def place(deployment: Deployment) -> Job:
    """Where every process of `deployment` runs in one job, what it waits for, and the start order."""
    job = _place(deployment, deployment.cpu_nodes)
    if deployment.cpu_nodes and not any(p.node == 0 for p in job.procs):   # nothing runs on the CPU node (a derived variant's local router)
        job = _place(deployment, 0)
    return job


def _place(deployment: Deployment, first: int) -> Job:
    blocks = list(deployment.blocks)
    workers, role_nodes, free = _worker_nodes(blocks, first)   # the blocks say it (a cookbook's hand-written ones too)
    names = processes(blocks)
    placed: list[Placed] = []
    cursor = 0
    for index, block in enumerate(blocks):
        npw = block.nodes_per_worker or 1
        copies = workers[index] if index in workers else [[node] for node in _service_nodes(block, blocks, first, role_nodes)]
        for nodes in copies:
            for rank, node in enumerate(nodes):
                if block.node_rank is not None and rank != block.node_rank:
                    continue
                name = names[cursor][0]
                cursor += 1
                placed.append(Placed(name, index, node, rank if npw > 1 else None, nodes[0] if index in workers else None))
    node_of = _served(blocks, placed)
    waits = {p.name: _needs(blocks, p, placed, node_of) for p in placed}
    return Job(max(free, 1, *(p.node + 1 for p in placed)), _start_order(placed, waits), node_of, waits)


def _served(blocks: list[Block], placed: list[Placed]) -> dict[str, int]:
    """Placeholder -> node: the services' IPs, each frontend's, and each `<ROLE>_<i>_HEAD_IP` a block
    names, matched to the i-th worker of that role serving the port its URL names (as the router lists them)."""
    node_of: dict[str, int] = {}
    frontends = [p for p in placed if blocks[p.block].kind == "dynamo-frontend"]
    for p in placed:
        kind = blocks[p.block].kind
        if kind in _SERVICE_PLACEHOLDERS:
            node_of.setdefault(_SERVICE_PLACEHOLDERS[kind], p.node)
    for i, p in enumerate(frontends):
        node_of[f"FRONTEND_{i}_IP"] = p.node
    seen: dict[tuple[str, str], int] = {}
    for block in blocks:
        for name, port in _REACHES.findall(_text(block)):
            head = _HEAD.fullmatch(name)
            if not head or name in node_of:
                continue
            role = head.group(1).lower()
            serving = [p for p in placed if blocks[p.block].kind == "worker" and blocks[p.block].role == role
                       and p.rank in (None, 0) and _port_of(blocks[p.block]) == port]
            k = seen[(role, port)] = seen.get((role, port), -1) + 1
            if k >= len(serving):
                raise ValueError(f"{name}:{port} names no {role} worker serving port {port}")
            node_of[name] = serving[k].node
    return node_of


def _needs(blocks: list[Block], p: Placed, placed: list[Placed], node_of: dict[str, int]) -> tuple[tuple[str, int, int], ...]:
    """(process, node, port) of every other process whose port `p` reaches: through an IP placeholder, or
    at 127.0.0.1 on its own node."""
    text = _text(blocks[p.block])
    reached = [(node_of[name], int(port), _serves(name, blocks)) for name, port in _REACHES.findall(text) if name in node_of]
    reached += [(p.node, int(port), lambda b: b.kind == "worker") for port in _LOCAL.findall(text)]
    found: dict[tuple[str, int, int], None] = {}
    for node, port, serves in reached:
        server = next((q for q in placed if q.node == node and q.rank in (None, 0) and serves(blocks[q.block])
                       and _port_of(blocks[q.block]) in (None, str(port))), None)
        if server is not None and server.name != p.name:
            found[(server.name, node, port)] = None
    return tuple(found)


def _serves(name: str, blocks: list[Block]) -> Callable[[Block], bool]:
    """Which blocks a placeholder's process can be: the service it names, a worker of its role, a frontend."""
    head = _HEAD.fullmatch(name)
    if head:
        return lambda b: b.kind == "worker" and b.role == head.group(1).lower()
    if _FRONTEND.fullmatch(name):
        return lambda b: b.kind == "dynamo-frontend"
    kind = next((k for k, v in _SERVICE_PLACEHOLDERS.items() if v == name), None)
    return lambda b: b.kind == kind


def _start_order(placed: list[Placed], waits: dict[str, tuple[tuple[str, int, int], ...]]) -> tuple[Placed, ...]:
    """Launch order, except that a process starts after every process whose port it waits for."""
    started: list[Placed] = []
    done: set[str] = set()
    left = list(placed)
    while left:
        ready = next((p for p in left if {w[0] for w in waits[p.name]} <= done), None)
        if ready is None:
            raise ValueError("processes wait for each other's ports: " + ", ".join(p.name for p in left))
        started.append(ready)
        done.add(ready.name)
        left.remove(ready)
    return tuple(started)


def pyxis_image(image: str) -> str:
    """`image` as pyxis passes it to enroot (`[REGISTRY#]IMAGE[:TAG]`): a registry host is set off with
    `#` instead of `/`, and a digest (`@sha256:...`, which enroot's reference syntax has no place for)
    becomes the tag, since enroot asks the registry for `manifests/<tag>` and a registry serves a digest
    there too. A path (a squashfs file) is kept as it is."""
    if image.startswith(("/", "./", "../")) or image.endswith(".sqsh"):
        return image
    name, _, digest = image.partition("@")
    host, slash, rest = name.partition("/")
    if slash and ("." in host or ":" in host or host == "localhost"):
        name = f"{host}#{rest}"
    if digest:
        tail = name.rsplit("/", 1)[-1]
        name = name[: len(name) - len(tail)] + tail.split(":", 1)[0] + ":" + digest
    return name


def _job_name(heading: list[str]) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", heading[0].split(" ")[0])[:64] if heading else "cookbook"


_START = """_start() {   # NAME NODE FUNCTION: run FUNCTION's body on node NODE in the background, in a fresh folder
  echo "starting $1 on $2" >&2
  srun --overlap --nodes=1 --ntasks=1 --nodelist="$2" --job-name="$1" --output="$LOG_DIR/$1.log" "${CONTAINER[@]}" \\
    bash -c "cd \\"\\$(mktemp -d)\\" && $(declare -f "$3") && $3" &
}"""

_WAIT = """_wait() {   # HOST:PORT...: until each accepts connections (WAIT_TIMEOUT seconds in all, tried every WAIT_INTERVAL)
  local target
  for target in "$@"; do
    echo "waiting for $target" >&2
    until (exec 3<>"/dev/tcp/${target%:*}/${target##*:}") 2>/dev/null; do
      if ((SECONDS >= WAIT_END)); then echo "timed out waiting for $target; stopping the job" >&2; _stop 1; fi
      sleep "${WAIT_INTERVAL:-5}"
    done
  done
}"""

_STOP = """_stop() {   # STATUS: end every process this job started, then the job
  kill $(jobs -p) 2>/dev/null
  wait
  exit "$1"
}"""


def sbatch_script(deployment: Deployment, heading: list[str], describe: Callable[[str], str | None]) -> str:
    """One `sbatch` script that starts every process of `deployment` (see the module's docstring);
    `bash -n` accepts it. `heading`: comment lines saying what it is; `describe(NAME)`: a placeholder's meaning."""
    job = place(deployment)
    blocks = list(deployment.blocks)
    bodies = [[*(line for name, content in b.files.items() for line in heredoc(name, content)),
               *b.preamble, *command_lines(b, "exec ")] for b in blocks]
    used = placeholders_in("\n".join(line for body in bodies for line in body))
    per_process = {"NODE_RANK", "NODE_IP", "AGG_HEAD_IP", "PREFILL_HEAD_IP", "DECODE_HEAD_IP"}
    given = [n for n in used if n not in job.node_of and n not in per_process and describe(n)]
    lines = ["#!/usr/bin/env bash", f"#SBATCH --job-name={_job_name(heading)}", f"#SBATCH --nodes={job.nodes}",
             "#SBATCH --ntasks-per-node=1", "#SBATCH --exclusive",
             *(comment_line(h) for h in heading),
             comment_line(f"One Slurm job of {job.nodes} node(s) that starts every process: "
                          "sbatch --account=ACCOUNT --partition=PARTITION --time=HH:MM:SS THIS_FILE"),
             *(comment_line(f"node {n}: " + ", ".join(p.name for p in job.procs if p.node == n)) for n in range(job.nodes)),
             comment_line("IP placeholders are the nodes' host names from the job's node list. Each process runs in a fresh "
                          "folder; its output goes to $LOG_DIR/NAME.log (default cookbook-logs-JOBID)."),
             comment_line("CONTAINER_IMAGE (default: the recipe's image" + (f" {deployment.image}, as pyxis names it" if deployment.image else "")
                          + "; empty: none) runs each process in that image through pyxis; CONTAINER_MOUNTS=/host:/container,... "
                          "mounts folders into it (the model cache)."),
             *(comment_line(f"Set {n} before sbatch: {describe(n)}") for n in given),
             "", _START, "", _WAIT, "", _STOP]
    for index, (block, body) in enumerate(zip(blocks, bodies)):
        lines += ["", block_comment(block), f"_block_{index}() {{", *body, "}"]
    image = pyxis_image(deployment.image) if deployment.image else ""
    lines += ["", 'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
              f'if ((${{#NODES[@]}} < {job.nodes})); then echo "this job needs {job.nodes} node(s), it has ${{#NODES[@]}}" >&2; exit 2; fi',
              *(f': "${{{n}:?{safe_text(describe(n) or n)}}}"' for n in given),
              *(f"export {n}=\"${{NODES[{node}]}}\"" for n, node in job.node_of.items() if n in used),
              *(f"export {n}" for n in given),
              f"CONTAINER_IMAGE=${{CONTAINER_IMAGE-{quote(image) if image else ''}}}",
              "CONTAINER=()",
              'if [[ -n $CONTAINER_IMAGE ]]; then CONTAINER=(--container-image="$CONTAINER_IMAGE" --no-container-entrypoint); fi',
              'if [[ -n ${CONTAINER_MOUNTS:-} ]]; then CONTAINER+=(--container-mounts="$CONTAINER_MOUNTS"); fi',
              'LOG_DIR=${LOG_DIR:-cookbook-logs-${SLURM_JOB_ID:-local}}', 'mkdir -p "$LOG_DIR"',
              "WAIT_END=$((SECONDS + ${WAIT_TIMEOUT:-3600}))", "trap '_stop 143' TERM", ""]
    for p in job.procs:
        waits = [f'"${{NODES[{node}]}}:{port}"' for _, node, port in job.waits[p.name]]
        if waits:
            lines.append("_wait " + " ".join(waits))
        lines.append(" ".join([*_process_env(blocks[p.block], p), "_start", p.name, f'"${{NODES[{p.node}]}}"', f"_block_{p.block}"]))
    lines += ["", f'echo "all {len(job.procs)} processes started; the job ends when one of them exits" >&2',
              "wait -n", "status=$?",
              'echo "a process exited with status $status; stopping the others" >&2',
              "_stop $((status ? status : 1))"]
    return "\n".join(lines) + "\n"


def _process_env(block: Block, p: Placed) -> list[str]:
    env = [f'NODE_IP="${{NODES[{p.node}]}}"']
    if p.head is not None and block.role:
        env.append(f'{block.role.upper()}_HEAD_IP="${{NODES[{p.head}]}}"')
    if p.rank is not None:
        env.append(f"NODE_RANK={p.rank}")
    return env


