"""Structural fuzzing of the bundled recipes, master entries and manifest: whatever they hold,
cookbookgen renders and checks it, or refuses it the documented way; never a traceback, never half
an output.

Each example makes one or two edits anywhere in an input (a value replaced by one of another type
or a hostile string, a key deleted, an unknown key added), then:
- recipes and master entries: renders a point in every format. Exit 0: the script passes
  `bash -n` and the JSON parses. Exit 2: stdout is empty and stderr holds one
  `file:line: key.path: problem` line per bad key path (one for a value that fails every member
  of a union, not one per member);
- recipes: the cookbook built from the edited recipe passes its own `diff` (renderer and checker
  read the recipe independently), unless it is refused;
- the manifest: `diff` is at parity or refuses it.

By default each input gets the same 60 examples on every run; `COOKBOOKGEN_FUZZ_EXAMPLES=2000`
explores that many random ones, e.g. before a release.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cookbookgen.cli import main

from conftest import DATA, SOURCE, examples, sglang_manifest

RECIPES = SOURCE / "inferencex-e2e/benchmarks"
BUNDLES = [
    "multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml",
    "multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/disagg-variants.yaml",
    "single_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4-mtp/agentic.yaml",
]
# The default run is derandomized (the same examples on every machine, so CI is reproducible);
# COOKBOOKGEN_FUZZ_EXAMPLES=N explores N new random examples per input.
_EXPLORE = os.environ.get("COOKBOOKGEN_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(_EXPLORE) if _EXPLORE else examples(60), derandomize=not _EXPLORE, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
# `file:line: key: problem`, or `file: key: problem` where no line applies (a module's JSON)
LINE = re.compile(r"^cookbookgen: error: (?P<where>.+?(?::\d+)?: \S+): .+$")

ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 2**70, 1.5, float("inf"), "", " ", "a b", "$(touch /tmp/pwned)", "'; rm -rf / #",
    "<script>alert(1)</script>", "../../etc/passwd", "line\nbreak", "\t", "x" * 5000, "ünïcödé", [], {},
    [1, "two", None], [{"a": 1}], {"nested": {"deeper": [1, 2]}}, {"type": "unknown-kind"},
]
# Issue 17's classes, for modules: nesting past the reader's limit, references (chains, cycles),
# an unknown KV tier, a negative count.
_DEEP: list[Any] = []
for _ in range(250):
    _DEEP = [_DEEP]
MODULE_ODD_VALUES: list[Any] = [*ODD_VALUES, _DEEP, {"ref": [0, "sglang", 0]}, {"ref": [1, "dynamo", 0]}, {"from": 0}, "ssd", -3]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in the tree (the root excluded), parents before children."""
    out: list[tuple[Any, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out.append(prefix + (key,))
        out.extend(_paths(value, prefix + (key,)))
    return out


def _parent(tree: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        tree = tree[key]
    return tree


def _odd(data: st.DataObject, values: list[Any] = ODD_VALUES) -> Any:
    return copy.deepcopy(data.draw(st.sampled_from(values), label="value"))   # a later edit may change it


EDITS = ("replace", "replace", "delete", "add")


def _edit(tree: Any, data: st.DataObject, values: list[Any] = ODD_VALUES, actions: tuple[str, ...] = EDITS) -> None:
    paths = _paths(tree)
    path = data.draw(st.sampled_from(paths), label="path")
    parent = _parent(tree, path)
    action = data.draw(st.sampled_from(actions), label="action")
    if action == "replace":
        parent[path[-1]] = _odd(data, values)
    elif action == "delete":
        del parent[path[-1]]
    elif action == "duplicate" and isinstance(parent, list):      # a second page for one model, a config listed twice...
        parent.append(copy.deepcopy(parent[path[-1]]))
    elif isinstance(parent, dict):
        parent[data.draw(st.sampled_from(["unknown_key", "args", "env", "extra-flag", "0"]), label="key")] = _odd(data, values)
    else:
        parent.append(_odd(data, values))


def _write_edited(source: Path, target: Path, data: st.DataObject, part: str | None = None) -> None:
    """`source` with one or two edits (inside its top-level `part` when given) written to `target`."""
    tree = yaml.safe_load(source.read_text())
    for _ in range(data.draw(st.integers(1, 2), label="edits")):
        _edit(tree[part] if part else tree, data)
    target.write_text(yaml.safe_dump(tree, sort_keys=False, allow_unicode=True))


def _copy_once(source: Path, target: Path) -> Path:
    """A copy of the `source` folder that the examples of one test share (each rewrites its edited file)."""
    if not target.exists():
        shutil.copytree(source, target)
    return target


def _render_every_format(argv: list[str], capsys) -> int:
    """Render in sh, json and text; the exit status (the same for all, or 2 at the first refusal)."""
    capsys.readouterr()
    for fmt in ("sh", "json", "text"):
        code = main([*argv, "--format", fmt])
        out, err = capsys.readouterr()
        assert code in (0, 2), (code, err)
        if code == 2:
            _assert_problem_lines(out, err)
            return code
        if fmt == "sh":
            check = subprocess.run(["bash", "-n"], input=out, text=True, capture_output=True)
            assert check.returncode == 0, check.stderr
        elif fmt == "json":
            assert json.loads(out)
    return 0


def _assert_problem_lines(out: str, err: str) -> None:
    matches = [LINE.match(line) for line in err.strip().splitlines()]
    assert out == "" and matches and all(matches), err
    where = [m["where"] for m in matches if m]
    assert len(where) == len(set(where)), err      # one line per bad key path


def _variants(tree: dict[str, Any]) -> list[str]:
    return [k for k in tree if k.startswith("override_")]


@pytest.mark.parametrize("relative", BUNDLES)
def test_every_variant_of_an_unedited_recipe_renders(relative: str, capsys) -> None:
    # The harness below can succeed: without edits, every variant renders in every format.
    tree = yaml.safe_load((RECIPES / relative).read_text())
    assert _variants(tree)
    for variant in _variants(tree):
        assert _render_every_format(["render", "--recipe", f"{RECIPES / relative}:{variant}"], capsys) == 0


@pytest.mark.parametrize("relative", BUNDLES)
@FUZZ
@given(data=st.data())
def test_an_edited_recipe_renders_or_is_refused_in_one_line(relative: str, tmp_path: Path, capsys, data: st.DataObject) -> None:
    variant = data.draw(st.sampled_from(_variants(yaml.safe_load((RECIPES / relative).read_text()))), label="variant")
    recipe = tmp_path / "recipe.yaml"
    _write_edited(RECIPES / relative, recipe, data)
    _render_every_format(["render", "--recipe", f"{recipe}:{variant}"], capsys)


MASTER = "inferencex-e2e/configs/nvidia-master.yaml"
POINTS = {   # a point of each master entry, rendered after the edit
    "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg": "tp4/c1",
    "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg": "c1228",
    "dsv41flash-fp4-gb300-sglang-agentic-dspark": "tp4/c1",
}


@pytest.mark.parametrize("config", sorted(POINTS))
@FUZZ
@given(data=st.data())
def test_an_edited_master_entry_renders_or_is_refused_in_one_line(config: str, tmp_path: Path, capsys, data: st.DataObject) -> None:
    # The same promise through the master config: a point of an edited entry (image, model, search
    # space, recipe references) renders, or each bad key path gets its line.
    source = _copy_once(SOURCE, tmp_path / "inferencex")
    _write_edited(SOURCE / MASTER, source / MASTER, data, part=config)
    _render_every_format(["render", "--source", str(source), "--config", config, "--point", POINTS[config]], capsys)


@pytest.mark.parametrize("relative", BUNDLES)
@FUZZ
@given(data=st.data())
def test_the_cookbook_of_an_edited_recipe_is_at_parity_with_it(relative: str, tmp_path: Path, capsys, data: st.DataObject) -> None:
    # Renderer and checker read the recipe independently: for any recipe the cookbook accepts, the
    # commands it renders must pass its own diff. The mismatches allowed are the designed ones: a
    # setting no policy rule or check knows (the diff fails until someone classifies it), and a flag
    # the engine of the cell's image would refuse (an edit may give a switch a value: `flags.check`).
    # The text report (config by config, with the memo shared by points) and JSON (whole cookbook) agree.
    root = _copy_once(DATA, tmp_path / "data")
    _write_edited(RECIPES / relative, root / "inferencex/inferencex-e2e/benchmarks" / relative, data)
    capsys.readouterr()
    code = main(["diff", "--cookbook", str(root / "cookbook.yaml")])
    out, err = capsys.readouterr()
    if code == 2:
        _assert_problem_lines(out, err)
        return
    assert main(["diff", "--cookbook", str(root / "cookbook.yaml"), "--format", "json"]) == code
    report = json.loads(capsys.readouterr().out)
    mismatches = [f for f in report["findings"] if f["cls"] == "mismatch"]
    unexpected = [f for f in mismatches if f["detail"] != UNKNOWN_SETTING and f["kind"] != "flag"]
    assert unexpected == [], unexpected
    assert code == (1 if mismatches else 0), out[-3000:]


UNKNOWN_SETTING = "no check compares it with the cookbook"


@FUZZ
@given(data=st.data())
def test_an_edited_manifest_is_checked_or_refused_in_one_line(tmp_path: Path, capsys, data: st.DataObject) -> None:
    # The cookbook manifest (pages, provenance, metrics) carries no launch setting: an edit is either
    # refused, or the cookbook is still at parity with the recipes.
    root = _copy_once(DATA, tmp_path / "data")
    _write_edited(DATA / "cookbook.yaml", root / "cookbook.yaml", data)
    capsys.readouterr()
    code = main(["diff", "--cookbook", str(root / "cookbook.yaml")])
    out, err = capsys.readouterr()
    assert code in (0, 2), out[-3000:] + err
    if code == 2:
        _assert_problem_lines(out, err)


# Manifest values that become a page folder, a nav title, an anchor or a URL, and names to put there.
NAMED = [("title",), ("repo",), ("pages", 0, "model"), ("pages", 0, "title"), ("pages", 0, "configs", 0, "key"),
         ("pages", 0, "configs", 0, "dashboard")]
NAMES = ["", " ", "x" * 10_000, "line\nbreak", "tab\there", "../../etc/passwd", "org/", "/", "<b>bold</b>", "ünïcödé/模型",
         "a" * 97, "javascript:alert(1)", "https://example.com/page", "deepseek-ai/DeepSeek-V4.1-Flash", "Deepseek-AI/deepseek_v4.1_flash"]


def _edit_names(tree: dict[str, Any], data: st.DataObject) -> None:
    """Set a value that names something, or move the last config of the first page to a page of its own
    for a model drawn from `NAMES` (the first page's model among them, in two spellings); nothing when
    an earlier edit removed the place."""
    second = data.draw(st.booleans(), label="second page")
    path = data.draw(st.sampled_from(NAMED), label="path")
    name = data.draw(st.sampled_from(NAMES), label="name")
    try:
        if second:
            tree["pages"].append({"model": name, "configs": [tree["pages"][0]["configs"].pop()]})
        else:
            _parent(tree, path)[path[-1]] = name
    except (KeyError, IndexError, TypeError, AttributeError):
        pass


@settings(FUZZ, max_examples=int(_EXPLORE or 12))     # a build takes seconds: fewer examples by default
@given(data=st.data())
def test_an_edited_manifest_builds_or_is_refused_in_one_line(tmp_path: Path, capsys, data: st.DataObject) -> None:
    # What becomes a page folder, a nav title or a URL (model names, titles, config keys, the repo) is
    # checked with the manifest: the site builds, or each problem gets its line, never MkDocs' own
    # lines about the package's mkdocs.yml or a scratch folder (issue 17); nothing is left behind.
    root = _copy_once(DATA, tmp_path / "data")
    tree = yaml.safe_load((DATA / "cookbook.yaml").read_text())
    for config in (c for page in tree["pages"] for c in page["configs"]):
        config.pop("metrics", None)        # dozens of numbers: the edits go to names, titles, keys and links
    for _ in range(data.draw(st.integers(1, 2), label="edits")):
        if data.draw(st.booleans(), label="a name"):
            _edit_names(tree, data)
        else:
            _edit(tree, data, actions=(*EDITS, "duplicate"))
    (root / "cookbook.yaml").write_text(yaml.safe_dump(tree, sort_keys=False, allow_unicode=True))
    out = tmp_path / "site"
    shutil.rmtree(out, ignore_errors=True)
    capsys.readouterr()
    code = main(["build", "--cookbook", str(root / "cookbook.yaml"), "--out", str(out), "--no-cache"])
    stdout, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        _assert_problem_lines(stdout, err)
        assert "mkdocs.yml" not in err and ".building" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["data", "site"] if code == 0 else ["data"])


@pytest.fixture(scope="module")
def module_json(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The bundled cookbook encoded as an AgentX module's JSON (`export --format json`)."""
    out = tmp_path_factory.mktemp("module") / "cookbook.json"
    assert main(["export", "--cookbook", str(sglang_manifest()), "--format", "json", "--out", str(out)]) == 0
    return out.read_text()


@FUZZ
@given(data=st.data())
def test_an_edited_agentx_module_decodes_or_is_refused_in_one_line(module_json: str, tmp_path: Path, capsys,
                                                                    data: st.DataObject) -> None:
    # A published module is someone else's file: an edit anywhere (cells, refs, diffs, patches,
    # envs, files) decodes and is compared with the recipes, or is refused with located lines.
    tree = json.loads(module_json)
    for _ in range(data.draw(st.integers(1, 2), label="edits")):
        _edit(tree, data, MODULE_ODD_VALUES)
    module = tmp_path / "module.json"
    module.write_text(json.dumps(tree))
    capsys.readouterr()
    for fmt in ("json", "text"):
        code = main(["show", str(module), "--format", fmt])
        out, err = capsys.readouterr()
        assert code in (0, 2), (code, err)
        if code == 2:
            _assert_problem_lines(out, err)
            break
        if fmt == "json":
            json.loads(out)
    code = main(["diff", "--cookbook", str(module), "--source", str(SOURCE)])   # an edit may be drift: exit 1
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        _assert_problem_lines(out, err)
    again = tmp_path / "again.json"
    again.unlink(missing_ok=True)
    code = main(["export", "--from-module", str(module), "--format", "json", "--out", str(again)])
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        _assert_problem_lines("", err)
        assert not again.exists()          # nothing half written


def test_an_etcd_service_entry_reaches_the_etcd_block(tmp_path: Path, capsys) -> None:
    # Found by the parity property: the env and args of an etcd entry under `services` were left out
    # of the etcd command (the diff flagged them as missing); now they are in it and the diff is at parity.
    root = _copy_once(DATA, tmp_path / "data")
    relative = "multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/disagg-variants.yaml"
    tree = yaml.safe_load((RECIPES / relative).read_text())
    etcd = next(s for s in tree["base"]["services"] if s["type"] == "etcd")
    etcd.update(env={"ETCD_QUOTA_BACKEND_BYTES": "8589934592"}, args={"max-txn-ops": 1024})
    (root / "inferencex/inferencex-e2e/benchmarks" / relative).write_text(yaml.safe_dump(tree, sort_keys=False))
    assert main(["diff", "--cookbook", str(root / "cookbook.yaml")]) == 0
    capsys.readouterr()
    assert main(["render", "--source", str(root / "inferencex"), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg",
                 "--point", "c1228", "--role", "etcd", "--format", "json"]) == 0
    (block,) = json.loads(capsys.readouterr().out)["blocks"]
    assert block["env"] == {"ETCD_QUOTA_BACKEND_BYTES": "8589934592"} and ["--max-txn-ops", "1024"] in block["args"]
