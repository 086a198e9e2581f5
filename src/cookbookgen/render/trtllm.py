"""TRT-LLM workers under Dynamo (`python3 -m dynamo.trtllm`) and the LLM-API options file each role's
command names. No I/O but reading the package table `rules/engines.yaml` once (render/vllm.py).

- A role's options (`roles.<role>.args` of the recipe, normalised to `roles.<role>.options`) are written
  as srt-slurm writes them: `yaml.safe_dump` of the merged mapping (keys sorted, block style). A `null`
  in the base stays `null` (it switches a TRT-LLM feature off); only an override's `null` deletes.
- Co-located workers (slots) each get their own DYN_SYSTEM_PORT (srt-slurm's per-process system port).
- The file is a block file: shown as a heredoc before the command, a `files` entry in JSON.
- trtllm-serve serving clients itself (a benchmark script's launch): `serve_parts`.
"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from ..policy.rules import Policy
from ..recipes.schema import EngineSpec, OptionsRoleSpec, Recipe, RoleSpec
from .layout import RoleLayout, Slot
from .tables import order_worker_args
from .values import args_from_words, kept, kept_args, kept_env, word
from .vllm import engine_tables

RawYaml = Any


def worker_parts(typed: Recipe, policy: Policy, model_id: str, layout: RoleLayout, slot: Slot,
                 spec: RoleSpec) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str], dict[str, str]]:
    """The command, ordered args, env and options file of one TRT-LLM worker of `layout`'s role."""
    table = engine_tables()["trtllm"]
    role = layout.role
    name = table["options_file"].format(role=role)
    args: list[tuple[str, ...]] = [("--model-path", model_id), ("--served-model-name", model_id), (table["options_flag"], name)]
    if role != "agg":
        args.append(("--disaggregation-mode", role))
    if typed.dynamo.request_plane:
        args.append(("--request-plane", word(typed.dynamo.request_plane)))
    engine = (typed.engine.model_extra or {}) if isinstance(typed.engine, EngineSpec) else {}
    args += [(flag,) for key, flag in table["switches"].items() if engine.get(key) is True]
    ordered = order_worker_args(args, table["lead_flags"])
    own = spec.options if isinstance(spec, OptionsRoleSpec) else {}
    options = {key: value for key, value in own.items() if kept(policy, ("roles", role, "options", key), value)[0]}
    env = {**kept_env(policy, ("roles", role, "env"), spec.env), "DYN_SYSTEM_PORT": str(table["system_port"] + slot.index)}
    return table["command"], ordered, env, {name: options_yaml(options)}


def serve_parts(policy: Policy, model_id: str, layout: RoleLayout, spec: RoleSpec,
                port: int) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str], dict[str, str]]:
    """The command, ordered args, env and options file of trtllm-serve serving clients itself (module
    docstring of recipes/launches.py): `[launcher] trtllm-serve MODEL`, the role's flags, and the options
    file as the benchmark script wrote it; from the role's `options` (safe_dump) only when the policy
    or an override changed them (the written text would then say something else)."""
    table = engine_tables()["trtllm_serve"]
    role = layout.role
    args: list[tuple[str, ...]] = [("--host", "0.0.0.0"), ("--port", str(port)), *kept_args(policy, ("roles", role, "args"), spec.args)]
    files: dict[str, str] = {}
    if isinstance(spec, OptionsRoleSpec) and (spec.options_file is not None or spec.options):
        decided = {key: kept(policy, ("roles", role, "options", key), value) for key, value in spec.options.items()}
        shown = {key: value for key, (keep, value) in decided.items() if keep}
        written = spec.options_file
        if written is None:     # options without the script's file (an override removed it): written from the options
            flag, name, text = table["options_flag"], table["options_file"].format(role=role), options_yaml(shown)
        else:
            flag, name = written.flag, written.name
            text = written.text if shown == spec.options and yaml.safe_load(written.text) == shown else options_yaml(shown)
        files[name] = text
        args.append((flag, name))
    launcher = spec.launcher if isinstance(spec, OptionsRoleSpec) else []
    cmd = shlex.join([*launcher, *shlex.split(table["command"]), model_id])
    return cmd, order_worker_args(args, table["lead_flags"]), kept_env(policy, ("roles", role, "env"), spec.env), files


def srtctl_serve_parts(policy: Policy, model_id: str, layout: RoleLayout, spec: RoleSpec,
                       public_port: int) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str], dict[str, str]]:
    """The one aggregated `trtllm-serve` of `frontend.type: trtllm_serve`, which serves clients itself, as
    srtctl launches it (`TRTLLMProtocol.build_worker_command`, direct launch): the model, host and public
    port, the parallel sizes repeated from the options as flags, `--config` naming the options file, then
    the role's `extra_args` verbatim."""
    table = engine_tables()["trtllm"]
    role = layout.role
    own = spec.options if isinstance(spec, OptionsRoleSpec) else {}
    options = {key: value for key, value in own.items() if kept(policy, ("roles", role, "options", key), value)[0]}
    name = table["options_file"].format(role=role)
    args: list[tuple[str, ...]] = [("--host", "0.0.0.0"), ("--port", str(public_port))]
    args += [(flag, word(options[key])) for flag, key in table["srtctl_serve_parallel_flags"].items() if options.get(key) is not None]
    args.append(("--config", name))
    args += args_from_words(spec.extra_args)
    env = kept_env(policy, ("roles", role, "env"), spec.env)
    return f"{table['srtctl_serve_command']} {shlex.quote(model_id)}", tuple(args), env, {name: options_yaml(options)}


def options_yaml(options: dict[str, RawYaml]) -> str:
    return yaml.safe_dump(_plain(options))


def _plain(value: RawYaml) -> RawYaml:
    """The value as `yaml.safe_load` gives it: plain dicts, lists, str, int, float (a float keeps no spelling)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return float(value)
    return str(value) if isinstance(value, str) else value


def dynamo_install(typed: Recipe) -> tuple[str, ...]:
    """The steps that build Dynamo from `dynamo.source: {git, rev}` (none without a git source)."""
    source = typed.dynamo.source
    if source is None or not source.git:
        return ()
    git, rev = shlex.quote(source.git), shlex.quote(str(source.rev or "HEAD"))
    return tuple(step.format(git=git, rev=rev) for step in engine_tables()["dynamo_source_install"])
