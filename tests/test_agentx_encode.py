"""The AgentX encoder: exact round trips (random and bundled data), compactness, determinism, re-encoding."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings

from cookbookgen.agentx.decode import Decoder, combinations
from cookbookgen.agentx.encode import (
    encode, expanded_size, expected, header_lines, module_path, point_patch, reencode, relative, same_block,
)
from cookbookgen.agentx.module import read_header_lines, read_module_text, write_module_text
from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.model import Cookbook, Variant
from cookbookgen.cells.variants import TIERS, with_variants
from cookbookgen.errors import CookbookError

from conftest import CORPUS, examples, sglang_manifest
from test_variants_strategies import cookbooks

MODULES = CORPUS / "sglang-cookbook" / "agentx"
PUBLIC = ("deepseek-ai/deepseek-v4.jsx", "zai-org/glm-5.2.jsx")


@pytest.fixture(scope="module")
def bundled() -> Cookbook:
    return with_variants(load_cookbook(sglang_manifest()))


@pytest.fixture(scope="module")
def exported(bundled: Cookbook) -> dict:
    return encode(bundled, "bundled.jsx")


def _cells(cb: Cookbook):
    return [c for p in cb.pages for c in p.cells]


def _other(router: str) -> str:
    return "sglang" if router == "dynamo" else "dynamo"


def _assert_round_trip(module: dict, cb: Cookbook) -> int:
    """Decode every (cell, point, router, tier) of `module` and compare with the cookbook's blocks."""
    dec = Decoder(module, "m")
    n = 0
    for ci, cell in enumerate(_cells(cb)):
        assert module["cells"][ci]["id"] == cell.id
        for pi, point in enumerate(cell.points):
            for router in (cell.router, _other(cell.router)):
                for kv in TIERS:
                    got = dec.decode_point(ci, pi, router, kv)
                    want = expected(cell, point, router, kv).blocks
                    assert [b.to_json() for b in got] == [b.to_json() for b in want], (cell.id, point.id, router, kv)
                    assert [list(b.env.items()) for b in got] == [list(b.env.items()) for b in want]
                    n += 1
    return n


# ---- round trips ----

@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cookbooks())
def test_random_deployments_round_trip(cb: Cookbook) -> None:
    cb = with_variants(cb)
    module = encode(cb, "random.jsx")
    assert _assert_round_trip(module, cb) == 6 * sum(len(c.points) for c in _cells(cb))
    text = write_module_text(module, header_lines(cb))
    assert read_module_text(text, "random.jsx") == module  # through the printed envelope too
    assert _assert_round_trip(json.loads(json.dumps(module)), cb) > 0


def test_bundled_round_trip_every_point_router_and_tier(bundled: Cookbook, exported: dict) -> None:
    assert _assert_round_trip(exported, bundled) == 13 * 6


def test_bundled_statuses(exported: dict) -> None:
    combos = combinations(exported, "bundled.jsx")
    measured = [c for c in combos if c["status"] != "derived"]
    assert len(combos) == 78 and len(measured) == 13
    assert {c["status"] for c in measured} == {"verified-pr", "in-progress"}


def test_bundled_compactness(exported: dict, bundled: Cookbook, record_property) -> None:
    text = write_module_text(exported, header_lines(bundled))
    size, expanded = len(text.encode("utf-8")), expanded_size(exported)
    ratio = expanded / size
    record_property("bundled_export_bytes", size)
    record_property("bundled_expanded_bytes", expanded)
    record_property("bundled_expansion_ratio", round(ratio, 2))
    assert ratio > 5.5, f"bundled export {size} B vs expanded commands {expanded} B: only {ratio:.2f}x smaller"
    kinds = [("ref" if "ref" in e else "from" if "from" in e else "full")
             for c in exported["cells"] for r in c["routers"].values() for e in r["blocks"]]
    assert kinds.count("ref") > kinds.count("full") and "from" in kinds


def test_bundled_layout_v2(exported: dict) -> None:
    assert list(exported) == ["model", "generatedOn", "source", "hardware", "checkpoints", "envs", "kvMooncake", "files", "cells"]
    cell = exported["cells"][0]
    assert cell["prov"] == {"sha": "2bc599fc4149e0d960c65d4deb528fd55cf282af",
                            "recipe": cell["prov"]["recipe"], "run": "38911006463/attempts/1", "pr": "4180",
                            "status": "verified-pr", "date": "2026-10-16"}
    assert exported["source"]["prs"]["4180"]["status"] == "verified-pr"
    assert list(cell["routers"]) == ["dynamo", "sglang"] and cell["submitted"] == "dynamo"
    assert cell["imageStatus"] == "ok" and cell["imageCommit"] == "a6a8c560"
    standalone = next(c for c in exported["cells"] if c["submitted"] == "sglang")
    assert "run" not in standalone["prov"] and standalone["prov"]["status"] == "in-progress"
    assert [p["concs"] for p in exported["cells"][0]["points"]] == [[1], [4], [16]]
    assert [p["item"] for c in exported["cells"][:2] for p in c["points"]] == [0, 1, 2, 3]


def test_export_is_deterministic(bundled: Cookbook, exported: dict) -> None:
    again = encode(load_cookbook(sglang_manifest()), "bundled.jsx")
    assert write_module_text(again, header_lines(bundled)) == write_module_text(exported, header_lines(bundled))
    assert json.dumps(again, ensure_ascii=False) == json.dumps(exported, ensure_ascii=False)
    assert module_path(bundled) == "agentx/deepseek-ai/deepseek-v4.1-flash.jsx"


def test_encoder_refuses_a_variant_it_cannot_reproduce(bundled: Cookbook) -> None:
    """A hand-edited variant that the decoder's KV transform would not produce: the encoder raises, naming the cell."""
    page = bundled.pages[0]
    cell = page.cells[0]
    bad = list(cell.variants)
    i = next(i for i, v in enumerate(bad) if (v.router, v.kv) == (cell.router, "hicache"))
    blocks = bad[i].deployment.blocks
    changed = blocks[-1].model_copy(update={"args": blocks[-1].args + (("--x-not-derivable", "1"),)})
    dep = bad[i].deployment.model_copy(update={"blocks": blocks[:-1] + (changed,)})
    bad[i] = Variant(router=bad[i].router, kv=bad[i].kv, point=bad[i].point, deployment=dep)
    cells = (cell.model_copy(update={"variants": tuple(bad)}),) + page.cells[1:]
    broken = bundled.model_copy(update={"pages": (page.model_copy(update={"cells": cells}),)})
    with pytest.raises(CookbookError) as info:
        encode(broken, "out/agentx.jsx")
    (problem,) = info.value.problems
    assert problem.file == "out/agentx.jsx"
    assert cell.id in problem.key_path and "dynamo/hicache" in problem.key_path
    assert "does not decode back" in problem.message


def test_duplicate_cell_ids_are_refused(bundled: Cookbook) -> None:
    page = bundled.pages[0]
    twice = bundled.model_copy(update={"pages": (page.model_copy(update={"cells": page.cells + page.cells[:1]}),)})
    with pytest.raises(CookbookError) as info:
        encode(twice, "dup.jsx")
    (problem,) = info.value.problems
    assert (problem.file, problem.key_path) == ("dup.jsx", f"cells[{len(page.cells)}].id")
    assert "duplicate cell id" in problem.message


# ---- encoding primitives ----

def test_relative_entries_use_diff_drop_and_overrides() -> None:
    src = {"kind": "worker", "role": "agg", "workers": 2, "gpu_pinning": [["0,1"]], "cmd": "a",
           "env": {"A": "1", "B": "2"}, "args": [["--model-path", "m"], ["--port", "30000"], ["--x", "1"]]}
    dst = {"kind": "worker", "role": "agg", "workers": 1, "cmd": "a",
           "env": {"A": "1", "C": "3"}, "args": [["--model-path", "m"], ["--port", "30000"], ["--y"]]}
    entry = relative({"ref": [0, "sglang", 0]}, src, dst)
    assert entry == {"ref": [0, "sglang", 0], "drop": ["gpu_pinning"], "workers": 1,
                     "diff": {"args": {"--y": [], "--x": None}, "env": {"C": "3", "B": None}}}
    unsorted = {**dst, "env": {"C": "3", "A": "1"}}  # a diff would sort the env: only the override form is exact
    assert relative({"from": 0}, src, unsorted)["env"] == {"C": "3", "A": "1"}


def test_point_patch_forms() -> None:
    base = [{"kind": "etcd", "cmd": "etcd", "env": {}, "args": []},
            {"kind": "worker", "cmd": "w", "env": {}, "args": [["--a", "1"]]}]
    assert point_patch(base, copy.deepcopy(base)) is None
    changed = copy.deepcopy(base)
    changed[1]["args"] = [["--a", "2"]]
    assert point_patch(base, changed) == [None, {"args": {"--a": ["2"]}}]
    changed[0]["count_nodes"] = 2  # not an args/env change: the block is replaced
    assert point_patch(base, changed) == [{"block": changed[0]}, {"args": {"--a": ["2"]}}]
    assert point_patch(base, base[:1]) == {"replace": base[:1]}
    assert same_block({"env": {"A": "1", "B": "2"}}, {"env": {"A": "1", "B": "2"}})
    assert not same_block({"env": {"A": "1", "B": "2"}}, {"env": {"B": "2", "A": "1"}})


# ---- public modules ----

@pytest.mark.parametrize("name", PUBLIC)
def test_reencoding_a_public_module(name: str, record_property) -> None:
    text = (MODULES / name).read_bytes().decode("utf-8")
    module = read_module_text(text, name)
    again = reencode(copy.deepcopy(module), name)
    assert combinations(again, name) == combinations(module, name)
    out = write_module_text(again, read_header_lines(text), text.endswith("\n"))
    ratio = len(out.encode("utf-8")) / len(text.encode("utf-8"))
    record_property(f"reencoded_over_original[{name}]", round(ratio, 3))
    assert ratio <= 1.0, f"{name}: re-encoded {len(out.encode())} B vs original {len(text.encode())} B ({ratio:.3f})"
    assert set(again) == set(module) and [c["id"] for c in again["cells"]] == [c["id"] for c in module["cells"]]
    assert all(set(c) == set(o) for c, o in zip(again["cells"], module["cells"]))  # same layout version (v1 stays v1)
    assert reencode(again, name) == again  # a fixed point


def test_reencoding_refuses_a_cyclic_module() -> None:
    module = read_module_text((MODULES / PUBLIC[1]).read_bytes().decode("utf-8"), PUBLIC[1])
    module["cells"][0]["routers"]["dynamo"]["blocks"][0] = {"ref": [1, "dynamo", 0]}
    module["cells"][1]["routers"]["dynamo"]["blocks"][0] = {"ref": [0, "dynamo", 0]}
    with pytest.raises(CookbookError) as info:
        reencode(module, "glm.jsx")
    (problem,) = info.value.problems
    assert problem.file == "glm.jsx" and "cycle" in problem.message and problem.key_path.startswith("cells[")
