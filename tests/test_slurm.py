"""`render --format slurm`: the sbatch script of every bundled deployment, run against stub `srun` and
`scontrol` (on PATH in a temp folder), starts every process on the node and GPUs its block says, with the
block's exact argv and environment, and starts a process only once the ports it reaches accept connections.

The stub `srun` records its options and runs the step's command as srun would (`bash -c ...`); each
server command (`python3`, `etcd`, ...) is a stub that records argv, environment and the files in its
folder, then listens on the ports its argv names, on its node's address (127.x.y.z loopback addresses
stand for the job's hosts), until the test ends it.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.variants import with_variants
from cookbookgen.cli import main
from cookbookgen.pipeline import render_all_points
from cookbookgen.policy.rules import load_policy
from cookbookgen.project import EXAMPLE_MANIFEST, EXAMPLE_SOURCE, bundled
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.model import Block, Deployment
from cookbookgen.render.shell import processes
from cookbookgen.render.slurm import pyxis_image, sbatch_script
from cookbookgen.render.tables import tables

_SRUN = """import json, os, sys
args = sys.argv[1:]
at = args.index("bash")
opts = args[:at]
node = next(o.split("=", 1)[1] for o in opts if o.startswith("--nodelist="))
name = next(o.split("=", 1)[1] for o in opts if o.startswith("--job-name="))
env = dict(os.environ, STUB_NODE=node, STUB_NAME=name, STUB_SRUN=json.dumps(opts), STUB_PID=str(os.getpid()))
os.execvpe(args[at], args[at:], env)
"""

_SCONTROL = """import os, sys
assert sys.argv[1:3] == ["show", "hostnames"] and sys.argv[3] == os.environ["SLURM_JOB_NODELIST"], sys.argv
print("\\n".join(os.environ["STUB_HOSTS"].split(",")))
"""

# A server stub: the step's main command (it replaced the step's shell, so it has the srun stub's pid)
# records itself and listens on the ports its argv names; anything else (a preamble's pip) just records.
_SERVER = """import json, os, re, socket, sys, time
from pathlib import Path
from typing import Callable
records = Path(os.environ["STUB_RECORDS"])
main = os.getpid() == int(os.environ.get("STUB_PID", "0"))
argv = [os.path.basename(sys.argv[0]), *sys.argv[1:]]
ports = [int(v) for f, v in zip(argv, argv[1:]) if f in ("--port", "--http-port")]
ports += [int(p) for f, v in zip(argv, argv[1:]) if f == "--listen-client-urls" for p in re.findall(r":(\\d+)", v)]
if argv[0] == "nats-server" and "-p" not in argv and "--port" not in argv:
    ports.append(4222)
if argv[0] == "nginx":
    ports += [int(p) for p in re.findall(r"listen\\s+(\\d+)", Path("nginx.conf").read_text())]
listening = []
for port in ports if main else []:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((os.environ["STUB_NODE"], port))
    s.listen()
    listening.append(s)
files = {f.name: f.read_text() for f in Path(".").iterdir() if f.is_file()}
record = {"name": os.environ["STUB_NAME"], "node": os.environ["STUB_NODE"], "argv": argv, "env": dict(os.environ),
          "files": files, "srun": json.loads(os.environ["STUB_SRUN"]), "ports": ports, "main": main, "time": time.monotonic()}
kind = "main" if main else "pre"
(records / f"{kind}-{os.environ['STUB_NAME']}-{os.getpid()}.json").write_text(json.dumps(record))
while main and not (records / "done").exists():
    time.sleep(0.05)
"""


def _bundled_deployments() -> tuple[dict[str, Deployment], dict[str, Deployment]]:
    """(measured, derived): every distinct deployment the bundled example publishes. Measured: each point
    of each master config and of the bundled cookbook's pages; derived: each router/KV variant the pages
    publish, one per distinct shape (processes, placement, GPUs, files, placeholders: what the job script
    is made of); the commands of the others are the measured ones' with other flags."""
    ws = Workspace(bundled(EXAMPLE_SOURCE))
    policy = load_policy(None)
    measured = {f"{key} {rp.point.point_id}": rp.deployment for key in ws.entries() for rp in render_all_points(ws, policy, key)}
    derived: dict[str, Deployment] = {}
    cookbook = with_variants(load_cookbook(bundled(EXAMPLE_MANIFEST)))
    for page in cookbook.pages:
        for cell in page.cells:
            measured.update({f"{cell.slug} {p.id}": p.deployment for p in cell.points})
            derived.update({f"{cell.slug} {v.router} {v.kv} {v.point}": v.deployment for v in cell.variants})
    return _distinct(measured, _blocks_key), _distinct(derived, _shape_key)


def _blocks_key(dep: Deployment) -> str:
    return json.dumps([b.to_json() for b in dep.blocks])


def _shape_key(dep: Deployment) -> str:
    return json.dumps([dep.cpu_nodes, *((b.kind, b.role, b.workers, b.nodes_per_worker, b.count, b.count_nodes, b.env.get("CUDA_VISIBLE_DEVICES"),
                                         sorted(b.files), sorted(set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", json.dumps(b.to_json())))))
                                        for b in dep.blocks)])


def _distinct(found: dict[str, Deployment], key: Callable[[Deployment], str]) -> dict[str, Deployment]:
    first: dict[str, str] = {}
    for name, dep in found.items():
        first.setdefault(key(dep), name)
    return {name: found[name] for name in first.values()}


MEASURED, DERIVED = _bundled_deployments()
DEPLOYMENTS = {**MEASURED, **DERIVED}


def _stubs(bin_dir: Path, blocks: list[Block]) -> None:
    bin_dir.mkdir()
    names = {shlex.split(b.cmd)[0] for b in blocks} | {"pip", "git", "maturin"}
    for name, text in [("srun", _SRUN), ("scontrol", _SCONTROL), *((n, _SERVER) for n in names)]:
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{text}")
        path.chmod(0o755)


def _run(script: str, tmp_path: Path, nodes: int, blocks: list[Block]) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    _stubs(tmp_path / "bin", blocks)
    records = tmp_path / "records"
    records.mkdir()
    (tmp_path / "job.sh").write_text(script)
    net = random.randrange(1, 250)
    hosts = [f"127.{net}.{n // 200}.{n % 200 + 1}" for n in range(nodes)]
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
           "SLURM_JOB_NODELIST": f"stub[0-{nodes - 1}]", "SLURM_JOB_ID": "42", "STUB_HOSTS": ",".join(hosts),
           "STUB_RECORDS": str(records), "LOG_DIR": str(tmp_path / "logs"), "WAIT_TIMEOUT": "60", "WAIT_INTERVAL": "0.05",
           **{name: f"value-of-{name}" for name in re.findall(r"^# Set ([A-Z][A-Z0-9_]*) before sbatch", script, re.M)}}
    job = subprocess.Popen(["bash", str(tmp_path / "job.sh")], cwd=tmp_path, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    expected = script.count("\n_start ") + len(re.findall(r"\n(?:[A-Z_]+=\S+ )+_start ", script))
    end = time.monotonic() + 120
    while len(list(records.glob("main-*.json"))) < expected and job.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    (records / "done").touch()
    out, err = job.communicate(timeout=60)
    found = [json.loads(p.read_text()) for p in sorted(records.glob("*.json"))]
    return subprocess.CompletedProcess(job.args, job.returncode, out, err), found


def test_a_placeholder_the_user_sets_is_checked_before_anything_starts(tmp_path: Path) -> None:
    key = next(k for k, d in DEPLOYMENTS.items() if "IB_DEVICES" in json.dumps([b.to_json() for b in d.blocks]))
    script = sbatch_script(DEPLOYMENTS[key], ["heading"], tables().describe_placeholder)
    assert "# Set IB_DEVICES before sbatch: " in script
    _stubs(tmp_path / "bin", list(DEPLOYMENTS[key].blocks))
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "n[0-7]",
                              "STUB_HOSTS": ",".join(f"127.0.0.{i + 1}" for i in range(8))})
    assert run.returncode != 0 and "IB_DEVICES: " in run.stderr and "starting" not in run.stderr


def _expand(text: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Z][A-Z0-9_]*)\}?", lambda m: env.get(m.group(1), m.group(0)), text)


@pytest.mark.parametrize("key", list(DEPLOYMENTS))
def test_the_sbatch_script_starts_every_process_as_its_block_says(key: str, tmp_path: Path) -> None:
    dep = DEPLOYMENTS[key]
    blocks = list(dep.blocks)
    script = sbatch_script(dep, ["heading"], tables().describe_placeholder)
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    nodes = int(re.search(r"^#SBATCH --nodes=(\d+)$", script, re.M).group(1))  # type: ignore[union-attr]
    run, records = _run(script, tmp_path, nodes, blocks)
    assert run.returncode == 1 and "stopping the others" in run.stderr, run.stderr
    mains = {r["name"]: r for r in records if r["main"]}
    assert sorted(mains) == sorted(n for n, *_ in processes(blocks))     # every process of the launch script, once
    block_of = {name: index for name, index, _, _ in processes(blocks)}
    for name, record in mains.items():
        block = blocks[block_of[name]]
        env = record["env"]
        opts = record["srun"]
        assert f"--nodelist={record['node']}" in opts and "--nodes=1" in opts and "--overlap" in opts
        assert (f"--container-image={pyxis_image(dep.image)}" in opts) == bool(dep.image)
        want = [*shlex.split(block.cmd), *(w for a in block.args for w in a)]
        assert record["argv"] == [_expand(w, env) for w in want], name
        assert not re.search(r"\$\{?[A-Z]", " ".join(record["argv"])), name       # every placeholder was set
        for key, value in block.env.items():
            assert env[key] == _expand(value, env), (name, key)
        assert env.get("CUDA_VISIBLE_DEVICES") == block.env.get("CUDA_VISIBLE_DEVICES"), name
        for file, content in block.files.items():
            assert record["files"][file].rstrip("\n") == _expand(content, env).rstrip("\n"), (name, file)
        rank = int(name.rsplit("-node", 1)[1]) if "-node" in name else 0
        if block.nodes_per_worker and block.nodes_per_worker > 1:
            assert env["NODE_RANK"] == str(rank)
            head = mains[name.rsplit("-node", 1)[0]]
            assert env[f"{block.role.upper()}_HEAD_IP"] == head["node"]     # type: ignore[union-attr]
        assert env.get("NODE_IP", record["node"]) == record["node"]
    _check_placeholders(mains, blocks, block_of)
    _check_gpus(mains, blocks, block_of)
    assert len({r["node"] for r in mains.values()}) == nodes          # the job asks for the nodes it uses
    if key in MEASURED and dep.cpu_nodes and any(b.kind in ("etcd", "dynamo-frontend") for b in blocks):
        assert nodes == dep.cpu_nodes + dep.nodes                     # as the recipe ran: its GPU nodes and its CPU node
    elif key in MEASURED:
        assert nodes == dep.nodes


def _check_placeholders(mains: dict[str, dict], blocks: list[Block], block_of: dict[str, int]) -> None:
    """Every IP placeholder a process was given names the node of the process it stands for, and every
    `$NAME:port` it reaches is served there (the stub listened on it before the process started)."""
    serving = {(r["node"], p): n for n, r in mains.items() for p in r["ports"]}
    by_kind = {blocks[block_of[n]].kind: r["node"] for n, r in mains.items()}
    for name, record in mains.items():
        env = record["env"]
        for key, node in (("ETCD_IP", "etcd"), ("NATS_IP", "nats"), ("MOONCAKE_MASTER_IP", "mooncake-master")):
            if key in env:
                assert env[key] == by_kind[node], (name, key)
        text = " ".join(record["argv"]) + " " + " ".join(record["env"].values())
        block = blocks[block_of[name]]
        raw = " ".join([*(w for a in block.args for w in a), *block.env.values()])
        for placeholder, port in re.findall(r"\$\{?([A-Z][A-Z0-9_]*_IP)\}?:(\d+)", raw):
            host = env[placeholder]
            assert f"{host}:{port}" in text
            server = serving.get((host, int(port)))
            if server and server != name:
                assert mains[server]["time"] < record["time"], f"{name} started before {server}, whose port it reaches"
            if re.fullmatch(r"(AGG|PREFILL|DECODE)_\d+_HEAD_IP", placeholder):
                assert server and blocks[block_of[server]].role == placeholder.split("_")[0].lower(), (name, placeholder)
    heads = [(r["env"][p], port) for r in mains.values() for p, port in
             re.findall(r"\$\{?((?:AGG|PREFILL|DECODE)_\d+_HEAD_IP)\}?:(\d+)", " ".join(w for a in blocks[block_of[r["name"]]].args for w in a))]
    assert len(heads) == len(set(heads)), "two worker URLs name the same worker"


def _check_gpus(mains: dict[str, dict], blocks: list[Block], block_of: dict[str, int]) -> None:
    """No two workers on one node share a GPU; an unpinned worker has its node to itself."""
    per_node: dict[str, list[str | None]] = {}
    for name, record in mains.items():
        if blocks[block_of[name]].kind == "worker":
            per_node.setdefault(record["node"], []).append(record["env"].get("CUDA_VISIBLE_DEVICES"))
    for node, pins in per_node.items():
        if None in pins:
            assert pins == [None], f"{node}: a worker owning the node shares it: {pins}"
        else:
            gpus = [g for p in pins for g in p.split(",")]   # type: ignore[union-attr]
            assert len(gpus) == len(set(gpus)), f"{node}: workers share GPUs: {pins}"


def test_render_format_slurm_writes_an_executable_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "job.sh"
    umask = os.umask(0o022)
    try:
        status = main(["render", "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg", "--point", "c1228",
                       "--format", "slurm", "--out", str(out)])
    finally:
        os.umask(umask)
    assert status == 0 and capsys.readouterr().out == ""
    text = out.read_text()
    assert out.stat().st_mode & 0o777 == 0o755
    assert text.startswith("#!/usr/bin/env bash\n#SBATCH ") and "#SBATCH --nodes=7" in text
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in text


@pytest.mark.parametrize(("image", "pyxis"), [
    ("lmsysorg/sglang:v0.5.9@sha256:0a1b", "lmsysorg/sglang:sha256:0a1b"),
    ("nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.6.1", "nvcr.io#nvidia/ai-dynamo/sglang-runtime:0.6.1"),
    ("localhost:5000/x/y@sha256:ff", "localhost:5000#x/y:sha256:ff"),
    ("/shared/images/sglang.sqsh", "/shared/images/sglang.sqsh"),
    ("rocm/vllm-dev:nightly", "rocm/vllm-dev:nightly"),
])
def test_images_are_named_as_enroot_reads_them(image: str, pyxis: str) -> None:
    assert pyxis_image(image) == pyxis
    # enroot's own reference syntax: docker://[USER@][REGISTRY#]IMAGE[:TAG]
    if not pyxis.startswith("/"):
        assert re.fullmatch(r"(?:[^#]+#)?[a-z0-9/._-]+(?::[A-Za-z0-9._:-]+)?", pyxis)
