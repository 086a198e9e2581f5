"""Usage errors carry no made-up location, and every "unknown" error names the valid choices,
closest first when there are many, on a short line (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cookbookgen.cli import main
from cookbookgen.text import CHOICES_SHOWN, listing, unknown
from conftest import SOURCE, master_keys, sglang_manifest

AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"


def error_of(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one error line of a run that must exit 2 (an argparse usage line may precede it)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if line.startswith("cookbookgen: error:")] == lines[-1:], lines
    assert len(lines) == 1 or lines[0].startswith("usage: "), lines
    return lines[-1]


# ---- usage errors: `cookbookgen: error: WHAT: message`, no file:line ----

@pytest.mark.parametrize("argv, line", [
    (["render"], "cookbookgen: error: render: give --config KEY --point LABEL, or --recipe FILE[:selector]"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--role", "prefil"],
     "cookbookgen: error: --role: unknown role or kind 'prefil'; expected one of: etcd, nats, dynamo-frontend, agg, worker"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--set", "roles.agg"], "cookbookgen: error: --set: 'roles.agg': expected dotted.path=value"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--set", "roles.agg.args.x=[1"],
     "cookbookgen: error: --set: 'roles.agg.args.x=[1': YAML syntax: did not find expected ',' or ']' (while parsing a flow sequence at line 1)"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--unset", "roles.nope"],
     "cookbookgen: error: --unset: 'roles.nope': no such setting in the effective recipe"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--unset", "roles..x"],
     "cookbookgen: error: --unset: 'roles..x': expected a dotted path such as roles.decode.args.max-running-requests"),
    # a non-UTF-8 byte in the value (argv keeps it as a surrogate) was a UnicodeEncodeError traceback in the YAML parser
    (["render", "--config", AGG, "--point", "tp4/c1", "--set", "roles.agg.env.X=a\udcffb"],
     "cookbookgen: error: --set: 'roles.agg.env.X=a\\udcffb': not UTF-8"),
    # set a key named 'services[0]' (exit 0, nothing rendered): a dotted path has no list items
    (["render", "--config", AGG, "--point", "tp4/c1", "--set", "services[0].args=[a]"],
     "cookbookgen: error: --set: 'services[0].args=[a]': a dotted path names mapping keys, not list items; set the whole list"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--role", ""],    # was every block, as if --role were not given
     "cookbookgen: error: --role: unknown role or kind ''; expected one of: etcd, nats, dynamo-frontend, agg, worker"),
    # both were ignored with --config (exit 0): the master's runner and model were used all the same
    (["render", "--config", AGG, "--point", "tp4/c1", "--cluster", "gb200-nv"],
     "cookbookgen: error: --cluster: only with --recipe; a config's model and cluster come from its master config"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--model", "org/Other"],
     "cookbookgen: error: --model: only with --recipe; a config's model and cluster come from its master config"),
    (["render", "--config", AGG, "--point", "tp4/c1", "--unset", "services[1]"],
     "cookbookgen: error: --unset: 'services[1]': a dotted path names mapping keys, not list items; set the whole list"),
])
def test_usage_error_has_no_location(capsys: pytest.CaptureFixture[str], argv: list[str], line: str) -> None:
    assert error_of(capsys, argv) == line


@pytest.mark.parametrize("argv, start", [
    (["render", "--format", "yaml"], "cookbookgen: error: render: argument --format: invalid choice: 'yaml' (choose from "),
    (["frobnicate"], "cookbookgen: error: argument command: invalid choice: 'frobnicate' (choose from "),
    ([], "cookbookgen: error: the following arguments are required: command"),
])
def test_argparse_error_prints_usage_then_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], start: str) -> None:
    assert error_of(capsys, argv).startswith(start)


# ---- unknown names ----

def test_listing_few_all_in_order() -> None:
    assert unknown("point", "c7", ["c1", "c4", "c16"]) == "unknown point 'c7'; expected one of: c1, c4, c16"
    assert unknown("cell", "x", []) == "unknown cell 'x'; there are none"


def test_listing_many_closest_first_and_bounded() -> None:
    names = [f"config-{i:04d}-gb300" for i in range(5000)]
    text = listing(names, "config-4321-gb30")
    shown = text.split(", ... ")[0].split(", ")
    assert shown[0] == "config-4321-gb300" and len(shown) == CHOICES_SHOWN
    assert text.endswith("(5000 in all, closest first)")
    assert listing(names, "zzz").startswith("config-0000-gb300, config-0001-gb300") and len(listing(names, "zzz")) < 300
    assert len(unknown("cell", "x" * 100_000, names)) < 1000


def test_unknown_config_key(capsys: pytest.CaptureFixture[str]) -> None:
    line = error_of(capsys, ["render", "--source", str(SOURCE), "--config", "foo", "--point", "c1"])
    assert line.endswith("--config: unknown config key 'foo'; expected one of: " + ", ".join(master_keys()) + f" (in the master configs of {SOURCE})")


def test_unknown_point(capsys: pytest.CaptureFixture[str]) -> None:
    line = error_of(capsys, ["render", "--source", str(SOURCE), "--config", AGG, "--point", "c7"])
    assert line.endswith("unknown point 'c7'; expected one of: tp4/c1, tp4/c4, tp4/c16, tp2-ep2/c16")


def test_unknown_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    recipe = SOURCE / "inferencex-e2e/benchmarks/single_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4-mtp/agentic.yaml"
    line = error_of(capsys, ["render", "--recipe", f"{recipe}:override_tp4_c1", "--cluster", "gb300-nw"])
    assert line.startswith("cookbookgen: error: --cluster: unknown cluster 'gb300-nw'; expected one of: ")
    assert "gb300-nv" in line


def test_unknown_cell_in_a_big_module(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`show --cell nope` on a module of 700 cells: a short line, the closest ids first, and the count."""
    assert main(["export", "--cookbook", str(sglang_manifest()), "--format", "json", "--out", str(tmp_path / "m.json")]) == 0
    module = json.loads((tmp_path / "m.json").read_text())
    cell = module["cells"][0]
    module["cells"] = [{**cell, "id": f"{cell['id'].split('#')[0]}-{i:03d}#0"} for i in range(700)]
    (tmp_path / "big.json").write_text(json.dumps(module))
    capsys.readouterr()
    line = error_of(capsys, ["show", str(tmp_path / "big.json"), "--cell", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg-345#1"])
    assert len(line) < 1000
    assert "--cell: unknown cell 'dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg-345#1'; expected one of: " \
           "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg-345#0, " in line
    assert line.endswith("(700 in all, closest first) (did you mean dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg-345#0?)")


def test_unknown_recipe_key_names_the_allowed_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("schema: 2\nmodel: {path: 'hf:x/y'}\nroles:\n  agg:\n    replicas: 2\n")
    line = error_of(capsys, ["render", "--recipe", str(recipe)])
    assert line == f"cookbookgen: error: {recipe}:5: roles.agg.replicas: unknown key 'replicas'; expected one of: nodes, workers, gpus, env, args, kv_events, extra_args"


def test_unknown_manifest_key_names_the_closest_allowed_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("title: t\nsource: .\npages:\n  - model: m\n    configs:\n      - key: k\n        commit: abcdef0\n        rnu: 3\n")
    line = error_of(capsys, ["list", "--cookbook", str(manifest)])
    assert line == (f"cookbookgen: error: {manifest}:8: pages[0].configs[0].rnu: unknown key 'rnu'; "
                    "expected one of: run, key, pr, commit, attempt, merged, date, metrics, ... (10 in all, closest first) (did you mean run?)")


def test_unknown_policy_rule_key_names_the_allowed_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("rules:\n  - {match: env.X, class: published, reason: r, reasn: typo}\n")
    line = error_of(capsys, ["render", "--config", AGG, "--point", "tp4/c1", "--policy", str(policy)])
    assert line == f"cookbookgen: error: {policy}:2: rules[0].reasn: unknown key 'reasn'; expected one of: match, class, reason, value, replacement (did you mean reason?)"
