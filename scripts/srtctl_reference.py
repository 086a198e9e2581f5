"""What srtctl itself launches for srt-slurm recipe variants, recorded offline.

Run with the Python of a separate environment where srtctl is installed (never cookbookgen's):

    python3 -m venv /tmp/srtctl-venv && /tmp/srtctl-venv/bin/pip install -e <srt-slurm checkout>
    /tmp/srtctl-venv/bin/python scripts/srtctl_reference.py --checkout <srt-slurm checkout> --out DIR RECIPE[:SELECTOR]...

For each variant it takes the variant's config as srtctl expands it (its own override, zip-override and
sweep functions), loads it with srtctl's `load_config`, builds srtctl's sweep orchestrator on a fake
Slurm allocation of exactly the nodes the recipe asks for, and calls the orchestrator's own stages:
head infrastructure, every worker, the frontend layer. srtctl's process launcher (`start_srun_process`)
is replaced by a recorder, host lookups return `IP(<node>)`, readiness waits return at once. Written per
variant: one JSON file with each launched process (argv, environment srtctl sets, nodes) and the files
srtctl wrote for them (TRT-LLM options files, nginx.conf).

The model path is replaced by `hf:org/model` (srtctl checks a local path exists) and the container by
a fixed name; both are placeholders in the comparison. Nothing here fetches anything.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest.mock import patch

import yaml

MODEL = "hf:org/model"
CONTAINER = "registry.example/image:tag"
_ZIP = re.compile(r"(zip_override_[\w-]+)\[(\d+)\]")
_SWEEP = re.compile(r"sweep\[(\d+)\]")


def variant_config(path: Path, selector: str | None) -> dict[str, Any]:
    """The config of one variant, expanded by srtctl's own functions."""
    from srtctl.core.config import generate_override_configs
    from srtctl.core.sweep import generate_sweep_configs

    raw = yaml.safe_load(path.read_text())
    if selector is None:
        return dict(raw)
    swept = _SWEEP.fullmatch(selector)
    if swept:
        return generate_sweep_configs(raw)[int(swept.group(1))][0]
    [(_, config)] = generate_override_configs(raw, selector)
    return dict(config)


def selectors(path: Path) -> list[str | None]:
    """Every variant of a recipe file, in cookbookgen's selector spelling."""
    from srtctl.core.config import expand_zip_override

    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        return []
    if "base" in raw:
        out: list[str | None] = [k for k in raw if k.startswith("override_")]
        for key in (k for k in raw if k.startswith("zip_override_")):
            out += [f"{key}[{i}]" for i in range(len(expand_zip_override(key[len("zip_override_"):], raw[key], raw["base"])))]
        return out
    if isinstance(raw.get("sweep"), dict):
        n = 1
        for values in raw["sweep"].values():
            n *= len(values)
        return [f"sweep[{i}]" for i in range(n)]
    return [None]


def _node_count(config: Any) -> int:
    res = config.resources
    extra = 1 if (config.infra.etcd_nats_dedicated_node or getattr(config.frontend, "dedicated_node", False)) else 0   # older srtctl: no dedicated frontend node
    return res.total_nodes + extra


def record(path: Path, selector: str | None, workdir: Path) -> dict[str, Any]:
    from srtctl.cli.do_sweep import SweepOrchestrator
    from srtctl.core.config import load_config
    from srtctl.core.processes import ProcessRegistry
    from srtctl.core.runtime import RuntimeContext

    config_dict = copy.deepcopy(variant_config(path, selector))
    config_dict.setdefault("model", {})["path"] = MODEL
    config_dict["model"]["container"] = CONTAINER
    config_file = workdir / "config.yaml"
    config_file.write_text(yaml.safe_dump(config_dict, sort_keys=False))
    launched: list[dict[str, Any]] = []

    class _Popen:
        pid = 1
        returncode = None

        def poll(self) -> None:
            return None

        def wait(self, timeout: float | None = None) -> int:
            return 0

    def fake_srun(command: list[str] | None = None, **kwargs: Any) -> _Popen:
        launched.append({"argv": [str(a) for a in command or []], "env": dict(kwargs.get("env_to_set") or {}),
                         "unset": list(kwargs.get("env_to_unset") or []), "nodes": list(kwargs.get("nodelist") or []),
                         "ntasks": kwargs.get("ntasks", 1)})
        return _Popen()

    targets = ["srtctl.core.slurm.start_srun_process", "srtctl.cli.do_sweep.start_srun_process",
               "srtctl.cli.mixins.worker_stage.start_srun_process", "srtctl.cli.mixins.frontend_stage.start_srun_process",
               "srtctl.frontends.dynamo.start_srun_process", "srtctl.frontends.sglang.start_srun_process",
               "srtctl.frontends.vllm.start_srun_process", "srtctl.frontends.trtllm_serve.start_srun_process"]
    ip_targets = ["srtctl.core.slurm.get_hostname_ip", "srtctl.core.runtime.get_hostname_ip",
                  "srtctl.cli.mixins.frontend_stage.get_hostname_ip", "srtctl.cli.mixins.worker_stage.get_hostname_ip",
                  "srtctl.frontends.sglang.get_hostname_ip", "srtctl.frontends.vllm.get_hostname_ip",
                  "srtctl.frontends.dynamo.get_hostname_ip", "srtctl.cli.do_sweep.get_hostname_ip"]
    waits = ["srtctl.core.health.wait_for_port", "srtctl.cli.do_sweep.wait_for_port", "srtctl.core.health.wait_for_model",
             "srtctl.cli.mixins.worker_stage.wait_for_port"]
    config = load_config(config_file)
    nodes = [f"node{i:02d}" for i in range(1, _node_count(config) + 1)]
    os.environ.update({"SLURM_JOB_ID": "1234", "SLURM_JOBID": "1234", "SLURM_NODELIST": ",".join(nodes),
                       "SLURM_NNODES": str(len(nodes)), "SRTCTL_OUTPUT_DIR": str(workdir / "out")})
    with ExitStack() as stack:
        for target in targets:
            _patch(stack, target, fake_srun)
        for target in ip_targets:
            _patch(stack, target, lambda node=None, *a, **k: f"IP({node})")
        for target in waits:
            _patch(stack, target, lambda *a, **k: True)
        _patch(stack, "srtctl.core.slurm.get_slurm_nodelist", lambda: list(nodes))
        _patch(stack, "srtctl.core.runtime.get_slurm_nodelist", lambda: list(nodes))
        runtime = RuntimeContext.from_config(config, job_id="1234")
        orchestrator = SweepOrchestrator(config=config, runtime=runtime)
        registry = ProcessRegistry(job_id="1234")
        if config.frontend.type not in {"trtllm_serve", "vllm"}:
            orchestrator.start_head_infrastructure(registry)
            if hasattr(orchestrator, "start_mooncake_master"):      # srtctl with backend.mooncake_kv_store
                orchestrator.start_mooncake_master(registry)
        orchestrator.start_all_workers()
        if "stop_event" in inspect.signature(orchestrator.start_frontend).parameters:
            orchestrator.start_frontend(registry, threading.Event())
        else:                                  # srtctl before the stop event (sa-submission-q2-2026 and older)
            orchestrator.start_frontend(registry)
        files = {p.name: p.read_text() for p in sorted(runtime.log_dir.iterdir())
                 if p.is_file() and p.suffix in (".yaml", ".conf", ".json") and not p.name.startswith(("config", "fingerprint"))}
    return {"nodes": nodes, "processes": launched, "files": files}


def _patch(stack: ExitStack, target: str, replacement: Any) -> None:
    try:
        stack.enter_context(patch(target, replacement))
    except (AttributeError, ImportError, ModuleNotFoundError):
        pass        # that module does not import the name


def _timeout(signum: int, frame: Any) -> None:
    raise TimeoutError("srtctl did not finish launching within 30 s (it waits for a process the recorder never starts)")


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGALRM, _timeout)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", required=True, type=Path, help="the srt-slurm checkout srtctl is installed from")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--all-variants", action="store_true", help="each RECIPE stands for all its variants")
    parser.add_argument("--skip-existing", action="store_true", help="keep the variants already recorded in --out")
    parser.add_argument("recipes", nargs="+", help="RECIPE[:SELECTOR], relative to the checkout")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    for ref in args.recipes:
        rel, _, sel = ref.partition(":")
        path = args.checkout / rel
        for selector in (selectors(path) if args.all_variants and not sel else [sel or None]):
            name = rel + (f":{selector}" if selector else "")
            entry: dict[str, Any] = {"recipe": rel, "selector": selector, "srt_slurm_commit": commit}
            out = args.out / (re.sub(r"[^A-Za-z0-9_.-]+", "__", name) + ".json")
            if args.skip_existing and out.exists():
                continue
            with tempfile.TemporaryDirectory() as tmp:
                signal.alarm(30)       # a frontend that waits for workers that never come (trtllm_serve) waits no longer
                try:
                    entry.update(record(path, selector, Path(tmp)))
                except Exception as exc:  # noqa: BLE001 - srtctl's refusal is the recorded result
                    entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
                    failures += 1
                finally:
                    signal.alarm(0)
            out.write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n")
    print(f"{failures} variant(s) refused by srtctl", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
