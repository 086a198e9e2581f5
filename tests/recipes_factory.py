"""`minimal_recipe(**over)`: a valid schema-2 recipe to build test cases from (STYLE rule 9)."""

from __future__ import annotations

from typing import Any

import yaml

from cookbookgen.recipes.merge import deep_merge


def minimal_recipe(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema": 2,
        "model": {"path": "hf:org/Model-1", "container": "lmsysorg/sglang:v1", "precision": "fp8"},
        "resources": {"gpu_type": "h200", "gpus_per_node": 8},
        "frontend": {"type": "dynamo"},
        "engine": "sglang",
        "roles": {"agg": {"nodes": 1, "workers": 1, "gpus": 8,
                          "args": {"served-model-name": "org/Model-1", "tensor-parallel-size": 8, "trust-remote-code": True},
                          "env": {"SGLANG_X": "1"}}},
    }
    return deep_merge(base, over)


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)
