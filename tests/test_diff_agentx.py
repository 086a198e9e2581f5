"""`cookbookgen diff` of the public SGLang AgentX module `deepseek-v4.jsx` against the corpus checkout.

The module (sgl-project/sglang @2b484a51, generated from InferenceX main ceb50ba2 + PR #3187 at
34d06e54) and the corpus recipes (agg-variants.yaml @07db303e, disagg-variants.yaml @a115decc) and
master excerpt (@d8e7cc8e) come from different commits, so they really differ. Every difference pinned
below was checked by hand in both files (module line / recipe line given per entry); none is invented,
and nothing else differs.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from cookbookgen.commands.diff import run_diff

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
MODULE = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4.jsx"
CHECKOUT = CORPUS / "inferencex"
AGG = "dsv4-fp4-gb300-dynamo-sglang-agentic-agg"
DISAGG = "dsv4-fp4-gb300-dynamo-sglang-agentic-disagg"
AGG_RECIPE = "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv4/sglang/gb300-fp4/agentx/agg-variants.yaml"
DISAGG_RECIPE = "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv4/sglang/gb300-fp4/agentx/disagg-variants.yaml"
MISSING, EXTRA, DIFFERENT = "missing from the cookbook", "extra in the cookbook", "different value"
SWITCH = "(switch)"

# (role, item, detail, recipe value, cookbook value) on every paired disaggregated point (c480, c960, c1440).
PER_DISAGG_POINT = [
    # master excerpt line 50 names the 20260829 nightly; every module cell of this key has 20260916-c9a8fba9
    # (the recipe's identity.container.image, disagg-variants.yaml:16), and "20260829" occurs nowhere in the module.
    ("cell", "image", DIFFERENT, "lmsysorg/sglang:nightly-dev-cu13-20260829-89816a21", "lmsysorg/sglang:nightly-dev-cu13-20260916-c9a8fba9"),
    # recipe :147 (prefill) / :223 (decode) `enable-cache-report: true` is absent from the module (and from every
    # published module): the policy classes it harness-only (cached-token counts for the client's figures).
    # recipe :236 decode `enable-w4a4-mxfp4-megamoe: true`; the module's decode block (cells[1] block 7, refs in cells 2-4) lacks it.
    ("decode", "--enable-w4a4-mxfp4-megamoe", MISSING, SWITCH, None),
    # recipe :246 decode endpoint tcp://*:5567; the module's decode block has tcp://*:5557 ("5567" occurs nowhere in it).
    ("decode", "--kv-events-config", DIFFERENT, '{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5567"}',
     '{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557"}'),
    # recipe :128-131 / :207-210 logging env (DYN_LOG, DYN_SKIP_SGLANG_LOG_FORMATTING, SGLANG_LOG_*) and :63/:140/:216
    # MC_STORE_CLIENT_METRIC_INTERVAL are absent from the module too, but the policy classes them harness-only
    # (log verbosity and telemetry), so they are excluded with a reason, not mismatches.
    # recipe :212/:215 decode MOONCAKE_PROTOCOL / MOONCAKE_DEVICE; the module's decode env (envs[3]) has neither.
    ("decode", "MOONCAKE_PROTOCOL", MISSING, "rdma", None),
    ("decode", "MOONCAKE_DEVICE", MISSING, "mlx5_0,mlx5_1,mlx5_2,mlx5_3 -> $IB_DEVICES", None),
]

EXPECTED = {
    # master excerpt :39 row tp4 conc [8] (override_tp4); the module's only cell of the key has override_tp8 (module :316).
    (AGG, "tp4/c8", "point", "tp4/c8", MISSING, f"{AGG_RECIPE}:override_tp4", None),
    # module :473 point concs [120, 480] with override_1p1d_c480; the master row has conc-list [480] only.
    (DISAGG, "c120", "point", f"{DISAGG}#0", EXTRA, None, f"{DISAGG}#0 c120 (override_1p1d_c480)"),
    # the module's cell #3 is override_4p1d_c2400 at c2400; the corpus recipe and master have override_4p1d_c1920 at c1920.
    (DISAGG, "c2400", "point", f"{DISAGG}#3", EXTRA, None, f"{DISAGG}#3 c2400 (override_4p1d_c2400)"),
    (DISAGG, "4p1d-dep8-dep16/c1920", "point", "4p1d-dep8-dep16/c1920", MISSING, f"{DISAGG_RECIPE}:override_4p1d_c1920", None),
    *[(DISAGG, point, *diff) for point in ("1p1d-dep8-dep16/c480", "2p1d-dep8-dep16/c960", "3p1d-dep8-dep16/c1440")
      for diff in PER_DISAGG_POINT],
}


@pytest.fixture(scope="module")
def report() -> dict:
    out = io.StringIO()
    args = argparse.Namespace(cookbook=[MODULE], source=CHECKOUT, config=None, logs=None, format="json", policy=None)
    status = run_diff(args, out)
    doc = json.loads(out.getvalue())
    assert doc["summary"]["exit"] == status
    return doc


def test_module_differences_are_exactly_the_verified_list(report: dict) -> None:
    found = {(f["config"], f["point"], f["role"], f["item"], f["detail"], f.get("recipe"), f.get("cookbook"))
             for f in report["findings"] if f["cls"] == "mismatch"}
    assert found == EXPECTED, (sorted(found - EXPECTED), sorted(EXPECTED - found))
    assert report["summary"]["exit"] == 1


def test_only_the_two_gb300_configs_are_compared_and_the_rest_listed(report: dict) -> None:
    checked = {c["config"] for c in report["cells"] if c["state"] == "checked"}
    assert checked == {AGG, DISAGG}
    absent = {c["config"]: (c["reason"], c["detail"]) for c in report["cells"] if c["state"] == "unpaired" and c["config"] not in checked}
    assert len(absent) == 10
    assert absent["dsv4-fp4-b200-dynamo-sglang-agentic-agg"][0] == "recipe-missing"
    assert absent["dsv4-fp4-b200-dynamo-sglang-agentic-agg"][1].startswith("recipe file not found")
    assert absent["dsv4-fp8-h200-dynamo-sglang-agentic-agg"] == ("no-master-entry", "dsv4-fp8-h200-dynamo-sglang-agentic-agg")
    assert report["summary"]["cells"] == {"checked": 4, "unpaired": 22}
    # cell #3 cites override_4p1d_c2400, which neither the corpus recipe nor the master rows have (they have c1920)
    assert [(c["cell"], c["reason"], c["detail"]) for c in report["cells"] if c["config"] == DISAGG and c["state"] == "unpaired"] == [
        (f"{DISAGG}#3", "selector-missing", "override_4p1d_c2400")]


def test_derived_variants_are_reported_and_not_compared(report: dict) -> None:
    derived = [f for f in report["findings"] if f["cls"] == "derived"]
    # cell 0: 2 routers x {none, hicache} minus the measured one; cells 1-4: 2 x {none, hicache, mooncake} minus one.
    assert len(derived) == 3 + 4 * 5
    assert {f["item"] for f in derived if f["config"] == AGG} == {"dynamo/hicache", "sglang/none", "sglang/hicache"}


def test_every_recipe_setting_of_a_paired_point_is_classified(report: dict) -> None:
    point = [f for f in report["findings"] if f["point"] == "tp8/c1"]
    excluded = {f["item"]: f["cls"] for f in point if f["cls"] in ("harness-only", "default-equivalent")}
    assert excluded["--enable-metrics"] == "harness-only"
    assert excluded["PIP_BREAK_SYSTEM_PACKAGES"] == "harness-only"
    topology = {f["item"]: (f["cls"], f.get("cookbook")) for f in point if f["kind"] == "topology"}
    assert topology == {"workers": ("match", "1"), "nodes_per_worker": ("match", "2"), "nodes": ("match", "2"), "count": ("match", "1")}


def test_logging_and_telemetry_env_the_module_drops_are_excluded_with_reasons(report: dict) -> None:
    point = [f for f in report["findings"] if f["point"] == "2p1d-dep8-dep16/c960" and f["role"] in ("prefill", "decode")]
    classes = {(f["role"], f["item"]): f["cls"] for f in point}
    for role in ("prefill", "decode"):
        for name in ("DYN_LOG", "DYN_SKIP_SGLANG_LOG_FORMATTING", "SGLANG_LOG_FORWARD_ITERS", "SGLANG_LOG_MS",
                     "MC_STORE_CLIENT_METRIC_INTERVAL"):
            assert classes[(role, name)] == "harness-only", (role, name)
