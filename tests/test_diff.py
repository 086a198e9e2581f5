"""`cookbookgen diff` units and the bundled-data gate CI runs (`cookbookgen diff` with no arguments)."""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from cookbookgen.project import EXAMPLE_MANIFEST, EXAMPLE_SOURCE, bundled
from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.commands import diff as diff_command
from cookbookgen.commands.diff import run_diff
from cookbookgen.diff.check import check
from cookbookgen.diff.model import whole
from cookbookgen.diff.compare import LEAF_HANDLERS, compare_point
from cookbookgen.diff.expect import point_expect, role_topology
from cookbookgen.diff.explain import CHECKS, table
from cookbookgen.diff.model import PublishedPoint
from cookbookgen.diff.pairing import pair_config, same_recipe
from cookbookgen.diff.report import as_text
from cookbookgen.diff.sources import published_from_cookbook_json
from cookbookgen.diff.structure import same_image
from cookbookgen.diff.words import flag_key, recipe_words, words_equal
from cookbookgen.errors import CookbookError
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace
from conftest import bundled_point_count

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "data" / "inferencex"
DISAGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg"
AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"


def _args(**over: object) -> argparse.Namespace:
    base = {"cookbook": None, "source": None, "config": None, "logs": None, "format": "text", "policy": None}
    return argparse.Namespace(**{**base, **over})


def _run(**over: object) -> tuple[int, str]:
    out = io.StringIO()
    return run_diff(_args(**over), out), out.getvalue()


# --- the CI gate ---------------------------------------------------------------------------------------

def test_bundled_cookbook_with_no_arguments_is_at_parity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)      # the bundled manifest alone, from any folder
    status, text = _run()
    assert status == 0
    assert text.splitlines()[0].startswith("cookbookgen diff: PASS (exit 0): parity; compared ")
    assert f"  points    {bundled_point_count()} paired and compared\n" in text


def test_the_command_prints_everything_and_exits_with_the_diffs_status_without_a_teardown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`cookbookgen` (`cli.console`) skips the interpreter's teardown: its output is still whole (a
    large one and one smaller than a buffer, printed only when flushed), its exit status the
    command's, and a reader that goes away early gets no traceback."""
    import shlex
    import subprocess
    import sys

    from cookbookgen.cli import main

    monkeypatch.chdir(ROOT)
    command = [sys.executable, "-m", "cookbookgen.cli"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}     # output buffered, as usual
    printed = []
    for argv in (["diff", "--format", "json"], ["render", "--config", AGG, "--point", "tp4/c16", "--role", "etcd"]):
        done = subprocess.run([*command, *argv], capture_output=True, text=True, timeout=300, env=env)
        assert main(argv) == done.returncode == 0
        assert capsys.readouterr().out == done.stdout and done.stderr == ""
        printed.append(done.stdout)
    assert len(printed[0]) > 8192 > len(printed[1]) and "etcd" in printed[1]
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: x\n")
    failed = subprocess.run([*command, "diff", "--cookbook", str(bad)], capture_output=True, text=True, timeout=300, env=env)
    assert failed.returncode == 2 and failed.stdout == "" and failed.stderr.startswith("cookbookgen: error: ")
    first = subprocess.run(f"{shlex.join(command)} diff --format json | head -c 10", shell=True, capture_output=True, text=True, timeout=300, env=env)
    assert first.stdout == printed[0][:10]
    assert "Traceback" not in first.stderr and "Exception" not in first.stderr


def test_bundled_markdown_has_the_reviewers_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    status, text = _run(format="markdown", config=AGG)
    lines = text.splitlines()
    assert status == 0
    start = lines.index(f"- **{AGG}**")
    assert lines[start - 2] == f"<details><summary>{AGG}: parity</summary>", "a config at parity is folded"
    assert lines[start:start + 3] == [
        f"- **{AGG}**",
        f"  - Points checked: tp4/c1, tp4/c4, tp4/c16, tp2-ep2/c16 (cells {AGG}#0, {AGG}#1).",
        "  - Result: every recipe argument and environment variable of every role and point matches; the only differences are "
        "the InferenceX-only settings below, the default-equivalent settings below, the cluster-provided environment below "
        "and placeholders (ports, IP addresses, node rank, NIC names).",
    ]
    assert "    - `--weight-loader-drop-cache-after-load: false` (agg; all points): restates SGLang's default (False)." in lines
    assert ("    - `NCCL_CUMEM_ENABLE=1` (agg; all points): the GB300-NV cluster exports it into every worker container "
            "(worker fingerprint env).") in lines
    assert ("    - `--enable-metrics` (agg; all points): Prometheus export that the AIPerf client scrapes for result collection; "
            "does not affect scheduling or kernels.") in lines


def test_a_site_folder_is_checked_only_when_given(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 34: `diff` added ./site whenever it existed (another MkDocs site made the README's own
    `cookbookgen diff` exit 2); it now reads what it is given, and says so in its first line."""
    shutil.copytree(ROOT / "data", tmp_path / "data")
    (tmp_path / "site").mkdir()
    cookbook = load_cookbook(tmp_path / "data" / "cookbook.yaml")
    (tmp_path / "site" / "cookbook.json").write_text(json.dumps(cookbook.model_dump(mode="json")), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    status, text = _run()
    assert status == 0 and text.splitlines()[0].endswith(f"; compared {bundled(EXAMPLE_MANIFEST)} against {bundled(EXAMPLE_SOURCE)}")
    status, text = _run(format="json", cookbook=[bundled(EXAMPLE_MANIFEST), Path("site")])
    doc = json.loads(text)
    assert (status, doc["summary"]["exit"]) == (0, 0), "one verdict over the manifest and its site"
    assert [d["kind"] for d in doc["summary"]["cookbooks"]] == ["rendered cookbook manifest", "site"]
    assert {c["state"] for c in doc["cells"]} == {"checked"} and doc["summary"]["cells"] == {"checked": 2 * sum(len(p.cells) for p in cookbook.pages), "unpaired": 0}   # in the manifest and in the site


def test_registered_subcommand_parses_the_documented_options() -> None:
    parser = argparse.ArgumentParser(prog="cookbookgen")
    diff_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["diff", "--cookbook", "m.jsx", "--source", "ROOT", "--config", "k", "--logs", "L", "--format", "markdown"])
    assert (args.cookbook, args.source, args.config, args.logs, args.format, args.run) == (
        [Path("m.jsx")], Path("ROOT"), "k", Path("L"), "markdown", run_diff)


# --- bad input -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "text", "message"), [
    ("cookbook.json", "{\n  \"pages\": [\n", "cookbook.json:3: (top): invalid JSON: Expecting value"),
    ("cookbook.json", "{\"hello\": 1}", "cookbook.json: unknown JSON: expected an AgentX module, a cookbook JSON (pages) or render --format json output (blocks)"),
    ("points.json", "[{\"blocks\": []}]", "points.json: [0].config: every point needs its config key"),
    ("module.jsx", "// x\nexport const agentx = {\"cells\": [{\"id\": \"k#0\", \"configKey\": \"k\", \"submitted\": \"dynamo\", "
                   "\"points\": [{\"concs\": [1]}], \"routers\": {\"dynamo\": {\"blocks\": [{\"ref\": [5, \"dynamo\", 0]}]}}}]};",
     "module.jsx: cells[0].routers.dynamo.blocks[0].ref: no cell 5 (module has 1)"),
    ("cookbook.txt", "x", "cookbook.txt: unknown cookbook format: expected a manifest (.yaml), an AgentX module (.jsx/.json), a cookbook JSON or a site directory"),
])
def test_bad_cookbook_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, encoding="utf-8")
    with pytest.raises(CookbookError) as err:
        _run(cookbook=[Path(name)], source=SOURCE)
    assert [str(p) for p in err.value.problems] == [message]


def test_unknown_config_and_missing_inputs_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(CookbookError, match="unknown config 'nope'; expected one of: dsv41flash"):
        _run(cookbook=[ROOT / "data" / "cookbook.yaml"], config="nope")
    with pytest.raises(CookbookError, match="the file does not exist"):
        _run(cookbook=[tmp_path / "missing.jsx"], source=SOURCE)
    with pytest.raises(CookbookError, match="the folder does not exist"):
        _run(cookbook=[ROOT / "data" / "cookbook.yaml"], source=tmp_path / "nowhere")


# --- words, tables, pairing, topology ------------------------------------------------------------------

@pytest.mark.parametrize(("a", "b", "same"), [
    (("0.80",), ("0.8",), True), (("14400",), ("14400.0",), True), (("True",), ("true",), True),
    (('{"a":1,"b":[1,2]}',), ('{"b": [1, 2], "a": 1}',), True), (("1",), ("True",), False), (("kv",), ("KV",), False),
    ((), (), True), ((), ("true",), False), (("a", "b"), ("a",), False), (("nan",), ("nan",), True), (("nan",), ("NaN",), False),
])
def test_words_compare_as_values(a: tuple[str, ...], b: tuple[str, ...], same: bool) -> None:
    assert words_equal(a, b) is same


def test_recipe_values_become_words_and_flags_share_keys() -> None:
    assert [recipe_words(v) for v in (True, None, 0.8, [1, "x"], {"a": 1}, False)] == [(), None, ("0.8",), ("1", "x"), ('{"a":1}',), ("false",)]
    assert flag_key("tp-size", True) == flag_key("--tensor-parallel-size", True) == "tp_size"
    assert flag_key("eviction_high_watermark_ratio", False) == "--eviction_high_watermark_ratio"
    # argparse (SGLang, Dynamo) accepts only the spelling it declares: `_` and `-` are two flags
    assert flag_key("--router_mode", False) != flag_key("--router-mode", False)
    assert flag_key("--chunked_prefill_size", True) != flag_key("--chunked-prefill-size", True)


def test_every_table_entry_names_a_known_check() -> None:
    named = {e[key] for section in ("args", "env") for kind in table()[section].values() for e in kind.values()
             for key in ("check", "required") if key in e}
    named |= {e["check"] for e in table()["blocks"].values()}
    assert named <= set(CHECKS)
    assert {e["check"] for e in table()["recipe_checks"]} <= set(LEAF_HANDLERS)


def test_recipe_paths_match_across_checkout_layouts() -> None:
    assert same_recipe("inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/a/b.yaml", "recipes/a/b.yaml:override_x")
    assert same_recipe("benchmarks/multi_node/srt-slurm-recipes/a/b.yaml", "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/a/b.yaml")
    assert not same_recipe("recipes/a/b.yaml", "recipes/a/c.yaml")


@pytest.mark.parametrize(("spec", "gpn", "expected"), [
    ({"nodes": 2, "workers": 4, "gpus": 2}, 4, (4, 1, 2, 2, ("0,1", "2,3"))),
    ({"nodes": 4, "workers": 1, "gpus": 16}, 4, (1, 4, 4, 1, ())),
    ({"workers": 2, "args": {"tp-size": 8}}, 4, (2, 2, 4, 1, ())),
    ({"workers": 1, "args": {"tensor-parallel-size": 2, "pipeline-parallel-size": 2}}, 8, (1, 1, 1, 1, ())),
    ({"workers": 3, "gpus": 2}, 8, (3, 1, 1, 3, ("0,1", "2,3", "4,5"))),
])
def test_topology_comes_from_the_recipe_numbers(spec: dict, gpn: int, expected: tuple) -> None:
    topo = role_topology("prefill", spec, gpn, None)
    assert (topo.workers, topo.nodes_per_worker, topo.expected_nodes, topo.per_node, topo.pins) == expected


def test_role_on_the_previous_roles_free_gpus_is_pinned_after_it() -> None:
    prefill = role_topology("prefill", {"nodes": 1, "workers": 1, "gpus": 2}, 4, None)
    decode = role_topology("decode", {"nodes": 0, "workers": 2, "gpus": 1}, 4, prefill)
    assert (decode.pins, decode.per_node) == (("2", "3"), 2)


@pytest.fixture(scope="module")
def resolved() -> tuple[Workspace, list]:
    ws = Workspace(SOURCE)
    entry = ws.entry(AGG)
    return ws, [ws.point(entry, row, c) for row in entry.rows for c in row.concs]


def test_pairing_by_override_concurrency_and_point_id(resolved: tuple[Workspace, list]) -> None:
    _, points = resolved
    published = [
        PublishedPoint(AGG, f"{AGG}#0", (1, 2), (), override="override_tp4_c1"),   # c2 is not in the checkout
        PublishedPoint(AGG, f"{AGG}#0", (4,), (), point_id="tp4/c4"),
        PublishedPoint(AGG, f"{AGG}#1", (16,), (), recipe="recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml"),
    ]
    pairs, findings = pair_config(AGG, published, points)
    assert [(p.published.cell, p.resolved.point_id) for p in pairs] == [(f"{AGG}#0", "tp4/c1"), (f"{AGG}#0", "tp4/c4")]
    bad = [(f.point, f.detail) for f in findings if f.is_mismatch]
    assert bad == [("c2", "extra in the cookbook"), ("c16", "extra in the cookbook"),
                   ("tp4/c16", "missing from the cookbook"), ("tp2-ep2/c16", "missing from the cookbook")]


# --- comparison details -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def c1228() -> tuple:
    ws, policy = Workspace(SOURCE), load_policy()
    cookbook = load_cookbook(ROOT / "data" / "cookbook.yaml")
    published = published_from_cookbook_json(cookbook.model_dump(mode="json"), "cookbook.json", "cookbook JSON")
    point = next(p for p in published.points if p.point_id == "4p1d-dep2-dep16/c1228")
    entry = ws.entry(DISAGG)
    row = entry.rows[0]
    resolved = ws.point(entry, row, 1228)
    return point, resolved, policy


def test_colocated_workers_sharing_one_port_are_caught(c1228: tuple) -> None:
    point, resolved, policy = c1228
    prefill = [b for b in point.blocks if b.role == "prefill"]
    merged = prefill[0].model_copy(update={"workers": 4, "gpu_pinning": (("0,1",), ("2,3",)),
                                           "env": {k: v for k, v in prefill[0].env.items() if k != "CUDA_VISIBLE_DEVICES"}})
    explorer_style = PublishedPoint(point.config, point.cell, point.concs, tuple(b for b in point.blocks if b.role != "prefill") + (merged,),
                                    point_id=point.point_id, image=point.image)
    found = compare_point(point_expect(resolved, policy), resolved.recipe, explorer_style, policy)
    bad = [(f.role, f.item, f.detail) for f in found if f.is_mismatch]
    assert bad == [("prefill", "ports --kv-events-config", "2 workers share a node but not a distinct --kv-events-config port each"),
                   ("prefill", "ports", "2 workers share a node but not a distinct --port each")]


def test_a_wrong_pinning_and_a_cookbook_only_env_are_named(c1228: tuple) -> None:
    point, resolved, policy = c1228
    blocks = [b.model_copy(update={"env": {**b.env, "CUDA_VISIBLE_DEVICES": "1,2", "MY_TUNING": "1"}}) if b.role == "prefill" else b
              for b in point.blocks]
    edited = PublishedPoint(point.config, point.cell, point.concs, tuple(blocks), point_id=point.point_id, image=point.image)
    found = compare_point(point_expect(resolved, policy), resolved.recipe, edited, policy)
    bad = sorted({(f.role, f.item, f.detail, f.reason) for f in found if f.is_mismatch})
    assert bad == [
        ("prefill", "CUDA_VISIBLE_DEVICES", "different value", "expected one of 0,1 / 2,3"),
        ("prefill", "MY_TUNING", "extra in the cookbook", "no recipe setting and no rule explain it"),
        ("prefill", "gpu_pinning", "different value", ""),
    ]


def test_a_recipe_setting_no_check_knows_is_not_passed_silently(tmp_path: Path) -> None:
    shutil.copytree(SOURCE, tmp_path / "inferencex")
    recipe = tmp_path / "inferencex/inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml"
    recipe.write_text(recipe.read_text().replace("  frontend:\n    type: dynamo\n", "  frontend:\n    type: dynamo\n    warmup_requests: 8\n"))
    cookbook = load_cookbook(ROOT / "data" / "cookbook.yaml")
    published = published_from_cookbook_json(cookbook.model_dump(mode="json"), "cookbook.json", "cookbook JSON")
    result = check(whole(published), Workspace(tmp_path / "inferencex"), load_policy(), AGG)
    assert {(f.item, f.detail) for f in result.findings if f.is_mismatch} == {("frontend.warmup_requests", "no check compares it with the cookbook")}


def test_text_report_is_coloured_only_for_terminals(c1228: tuple) -> None:
    point, resolved, policy = c1228
    cookbook = load_cookbook(ROOT / "data" / "cookbook.yaml")
    published = published_from_cookbook_json(cookbook.model_dump(mode="json"), "cookbook.json", "cookbook JSON")
    result = check(whole(published), Workspace(SOURCE), policy, DISAGG)
    assert "\x1b[" in as_text(result, color=True, verbose=True)
    plain = as_text(result, color=False, verbose=True)
    assert "\x1b[" not in plain and "    prefill          " in plain
    assert os.linesep not in plain.replace("\n", "")


@pytest.mark.parametrize(("a", "b", "same"), [
    ("img:1@sha256:aa", "other:2@sha256:aa", True), ("img:1@sha256:aa", "img:1@sha256:bb", False),
    ("img:1", "img:1@sha256:aa", True), ("img:1", "img:2", False),
])
def test_images_compare_by_digest_else_by_tag(a: str, b: str, same: bool) -> None:
    assert same_image(a, b) is same
