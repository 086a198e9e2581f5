"""ATOM (ROCm/ATOM's OpenAI-compatible server) serving clients itself, as InferenceX's single-node
benchmark scripts start it. No I/O but reading the package table `rules/engines.yaml` once.

- `python3 -m atom.entrypoints.openai_server --model <model id>` on the cookbook's public port
  (`--server-port`, `--host 0.0.0.0`), then the role's flags spelled as the script wrote them (`-tp`,
  `--kv_cache_dtype`).
"""

from __future__ import annotations

from ..policy.rules import Policy
from ..recipes.schema import RoleSpec
from .layout import RoleLayout
from .tables import order_worker_args
from .values import kept_args, kept_env
from .vllm import engine_tables


def worker_parts(policy: Policy, model_id: str, layout: RoleLayout, spec: RoleSpec,
                 port: int) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str]]:
    """The command, ordered args and env of the one ATOM worker."""
    table = engine_tables()["atom"]
    role = layout.role
    lead = [("--model", model_id), ("--host", "0.0.0.0"), ("--server-port", str(port))]
    args = [*lead, *kept_args(policy, ("roles", role, "args"), spec.args)]
    return table["command"], order_worker_args(args, table["lead_flags"]), kept_env(policy, ("roles", role, "env"), spec.env)
