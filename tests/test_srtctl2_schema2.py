"""Schema-2 recipes against srtctl 2.x, which is readable but not runnable here: each expectation in
data/srtctl/schema2/expectations.yaml was derived by hand from srtctl 2.x's source (SemiAnalysisAI/srt-slurm) and
names the functions it follows. cookbookgen's render of each recipe variant is compared with it as whole commands,
role by role (argv and env), with the same documented exclusions as the srtctl v1.0.68 goldens
(scripts/srtctl_compare.py: placeholders, the port table, srtctl plumbing, settings the policy holds back).
What still differs is listed per record with the reason it was judged acceptable."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).parent / "data"
SLICE = DATA / "corpus" / "inferencex-e2e-slice"
EXPECTED = yaml.safe_load((DATA / "srtctl" / "schema2" / "expectations.yaml").read_text())
sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))

import srtctl_compare  # noqa: E402


def _name(record: dict[str, object]) -> str:
    return f"{record['recipe']}:{record['selector']}"


def test_every_expectation_cites_srtctl_2_source() -> None:
    sources = EXPECTED["sources"]
    assert all(set(s) == {"repo", "commit", "path", "function"} and len(s["commit"]) == 40 for s in sources.values())
    assert len(EXPECTED["records"]) >= 6
    for record in EXPECTED["records"]:
        assert record["follows"] and set(record["follows"]) <= set(sources) and record["why"]
        text = (SLICE / record["recipe"]).read_text()
        assert "schema: 2" in text


@pytest.mark.parametrize("record", EXPECTED["records"], ids=_name)
def test_schema2_commands_agree_with_srtctl_2_or_differ_as_listed(record: dict[str, object]) -> None:
    assert srtctl_compare.differences(record, SLICE) == record["differences"]


def test_the_comparison_catches_a_changed_flag_in_a_schema2_expectation() -> None:
    """Not vacuous: one value changed in srtctl's expected argv is a difference naming it."""
    record = next(r for r in EXPECTED["records"] if r["selector"] == "override_tp8_c1")
    edited = json.loads(json.dumps(record).replace('"--swa-prefix-tails", "8"', '"--swa-prefix-tails", "16"'))
    assert edited != record
    found = srtctl_compare.differences(edited, SLICE)
    assert found and "('--swa-prefix-tails', '16.0')" in found[0] and "('--swa-prefix-tails', '8.0')" in found[0]


def test_a_schema2_vllm_worker_on_several_nodes_runs_headless_on_the_others() -> None:
    """srtctl 2.x's standard multi-node path (`VLLMProtocol.build_worker_command`, backends/vllm.py at 13744bc6):
    the head node serves, every other node runs --headless with its own --node-rank; one block per node."""
    from cookbookgen.policy.rules import load_policy
    from cookbookgen.recipes.workspace import Workspace
    from cookbookgen.render.deploy import RenderContext, render

    recipe = DATA / "srtctl/schema2/inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/kimik3/vllm/gb200-fp4/agentx/agg-variants.yaml"
    point = Workspace(Path(".")).bare_recipe(f"{recipe}:override_tp16_latency")
    workers = [b for b in render(point.recipe, point.typed, RenderContext("org/model", load_policy())).blocks if b.kind == "worker"]
    assert [(b.node_rank, b.nodes_per_worker, b.workers) for b in workers] == [(0, 4, 1), (1, 4, 1), (2, 4, 1), (3, 4, 1)]
    for rank, block in enumerate(workers):
        multi = [a for a in block.args if a[0] in ("--master-addr", "--nnodes", "--node-rank", "--headless")]
        assert multi == [("--master-addr", "$AGG_HEAD_IP"), ("--nnodes", "4"), ("--node-rank", str(rank))] + [("--headless",)] * (rank > 0)
