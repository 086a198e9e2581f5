"""Bad input: exit 2 with exactly one line `file:line: key.path: problem`, and no traceback."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cookbookgen.cli import main
from recipes_factory import dump, minimal_recipe

from conftest import SOURCE, master_keys

LINE = re.compile(r"^cookbookgen: error: (?P<file>[^:]+):(?P<line>\d+): (?P<key>\S+): (?P<msg>.+)$")


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(capsys, argv: list[str]) -> str:
    """The one line of a bad input that has no file line to point at (a plain sentence), without its prefix."""
    code, out, err = run_cli(capsys, argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("cookbookgen: error: ") and not LINE.match(lines[0]), lines[0]
    return lines[0].removeprefix("cookbookgen: error: ")


def one_problem(capsys, argv: list[str]) -> re.Match[str]:
    code, out, err = run_cli(capsys, argv)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    assert len(lines) == 1, err
    match = LINE.match(lines[0])
    assert match, lines[0]
    return match


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


CASES = {
    "yaml-syntax": ("schema: 2\nroles:\n  agg: [unclosed\n", 4, "(top)", "YAML syntax"),
    "wrong-type": (dump(minimal_recipe(roles={"agg": {"workers": "two"}})), 0, "roles.agg.workers", "valid integer"),
    "unknown-engine": (dump(minimal_recipe(engine="llamacpp")), 0, "engine", "unknown engine 'llamacpp'"),
    "tilert-not-yet": (dump(minimal_recipe(engine="tilert")), 0, "engine", "not supported yet"),
    "unknown-frontend": (dump(minimal_recipe(frontend={"type": "haproxy"})), 0, "frontend.type", "Input should be"),
    "unknown-role-key": (dump(minimal_recipe(roles={"agg": {"replicas": 2}})), 0, "roles.agg.replicas", "unknown key"),
    "options-of-sglang": (dump(minimal_recipe(roles={"agg": {"options": {"x": 1}}})), 0, "roles.agg.options", "unknown key 'options'"),
    "options-of-trtllm": (dump(minimal_recipe(engine={"type": "trtllm"}, roles={"agg": {"options": {"x": 1}}})), 0, "roles.agg.options",
                          "write the role's LLM-API options under args"),
    "python-tag": ("schema: 2\nmodel: !!python/object/apply:os.system ['true']\n", 2, "model", "is not allowed"),
    # a duplicate key of a recipe takes the last value and is reported (test_srtctl_v1); our own files stay strict
    "alias-bomb": ("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                   "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                   "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n", 0, "", "alias bomb"),
    "non-utf8": (b"schema: 2\nname: caf\xe9\n", 2, "(top)", "not UTF-8"),
    # found by tests/test_fuzz_recipes.py: each crashed with a traceback, or printed one line per union member
    "placement-list": (dump(minimal_recipe(frontend={"placement": {"node": []}})), 0, "frontend.placement.node", "valid string"),
    "identity-not-mapping": (dump(minimal_recipe(identity={"container": True})), 0, "identity.container", "Input should be"),
    "env-value-list": (dump(minimal_recipe(roles={"agg": {"env": {"X": [1]}}})), 0, "roles.agg.env.X",
                       "a valid string, a valid integer, a valid number or a valid boolean (received list)"),
    # found by the parity fuzz test: the renderer and the checker read these differently
    "request-plane-bool": (dump(minimal_recipe(dynamo={"request_plane": True})), 0, "dynamo.request_plane", "valid string"),
    "fractional-tp": (dump(minimal_recipe(roles={"agg": {"args": {"tensor-parallel-size": 1.5}}})), 0,
                      "roles.agg.args.tensor-parallel-size", "must be a positive whole number (received 1.5)"),
    "idle-nodes": (dump(minimal_recipe(roles={"agg": {"nodes": 2, "workers": 1, "gpus": 2}})), 0, "roles.agg.nodes",
                   "1 worker(s) of 2 GPUs, 1 per node, fill 1 node(s), not 2"),
    "decode-without-prefill": (dump({**minimal_recipe(), "roles": {"decode": minimal_recipe()["roles"]["agg"]}}), 0, "roles",
                               "worker roles decode: expected roles.agg, or roles.prefill and roles.decode"),
    # an env name the shell does not take as an assignment runs as a command when pasted (`$(id)=1 \` ran `id`)
    "env-name-command": (dump(minimal_recipe(roles={"agg": {"env": {"$(id)": "1"}}})), 0, "roles.agg.env.$(id)",
                         "not an environment variable name (letters, digits and _, not starting with a digit)"),
    "env-name-dash": (dump(minimal_recipe(frontend={"env": {"DYN-LOG": "info"}})), 0, "frontend.env.DYN-LOG",
                      "not an environment variable name"),
    "env-name-digit": (dump(minimal_recipe(services=[{"name": "etcd", "type": "etcd", "env": {"1X": "1"}}])), 0,
                       "services[0].env.1X", "not an environment variable name"),
    # srtctl passes both as --max-running-requests; which one the engine takes is not in the recipe
    "arg-spelt-twice": (dump(minimal_recipe(roles={"agg": {"args": {"max-running-requests": 8, "max_running_requests": 5}}})), 0,
                        "roles.agg.args.max_running_requests", "the flag --max-running-requests, which max-running-requests also sets; keep one"),
    "router-args-without-router": (dump(minimal_recipe(frontend={"type": "sglang", "args": {"policy": "round_robin"}})), 0,
                                   "frontend.args", "starts no router"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_recipe_gives_one_located_line(tmp_path: Path, capsys, name: str) -> None:
    text, line, key, message = CASES[name]
    path = write(tmp_path, f"{name}.yaml", text)
    match = one_problem(capsys, ["render", "--recipe", str(path), "--model", "org/Model-1"])
    assert match["file"] == str(path)
    if line:
        assert int(match["line"]) == line
    else:
        assert int(match["line"]) > 0
    if key:
        assert match["key"] == key
    assert message in match["msg"]


def test_line_of_a_wrong_type_points_at_the_value(tmp_path: Path, capsys) -> None:
    text = dump(minimal_recipe(roles={"agg": {"workers": "two"}}))
    path = write(tmp_path, "r.yaml", text)
    match = one_problem(capsys, ["render", "--recipe", str(path)])
    assert text.splitlines()[int(match["line"]) - 1].strip() == "workers: two"


def test_unknown_selector_lists_the_offered_ones(tmp_path: Path, capsys) -> None:
    bundle = {"base": minimal_recipe(), "override_a": {"roles": {"agg": {"args": {"x": 1}}}}}
    path = write(tmp_path, "b.yaml", dump(bundle))
    match = one_problem(capsys, ["render", "--recipe", f"{path}:override_b"])
    assert match["key"] == "override_b" and "expected one of: override_a" in match["msg"]


def test_zip_length_mismatch(tmp_path: Path, capsys) -> None:
    bundle = {"base": minimal_recipe(), "zip_override_z": {"roles": {"agg": {"args": {"a": [1, 2], "b": [1, 2, 3]}}}}}
    path = write(tmp_path, "z.yaml", dump(bundle))
    match = one_problem(capsys, ["render", "--recipe", f"{path}:zip_override_z[0]"])
    assert match["key"] == "zip_override_z" and "different lengths" in match["msg"]
    assert int(match["line"]) == dump(bundle).splitlines().index("zip_override_z:") + 1


def test_missing_recipe_file(capsys, tmp_path: Path) -> None:
    line = one_sentence(capsys, ["render", "--recipe", str(tmp_path / "nope.yaml")])
    assert line == f"{tmp_path / 'nope.yaml'}: the file does not exist"


def _copy_source(tmp_path: Path) -> Path:
    root = tmp_path / "inferencex"
    shutil.copytree(SOURCE, root)
    return root


def test_master_row_naming_a_missing_recipe(tmp_path: Path, capsys) -> None:
    root = _copy_source(tmp_path)
    master = root / "inferencex-e2e/configs/nvidia-master.yaml"
    master.write_text(master.read_text().replace("agg-variants.yaml:override_tp4_c1", "gone.yaml:override_tp4_c1"))
    match = one_problem(capsys, ["render", "--source", str(root), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--point", "c1"])
    assert match["file"].endswith("nvidia-master.yaml") and "recipe file not found" in match["msg"]
    assert "gone.yaml" in master.read_text().splitlines()[int(match["line"]) - 1]


def test_recipe_path_leaving_the_checkout(tmp_path: Path, capsys) -> None:
    root = _copy_source(tmp_path)
    master = root / "inferencex-e2e/configs/nvidia-master.yaml"
    master.write_text(master.read_text().replace("recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml:override_tp4_c1", "../../../etc/passwd"))
    match = one_problem(capsys, ["render", "--source", str(root), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--point", "c1"])
    assert "stay inside the checkout" in match["msg"]


def test_unknown_config_and_point(capsys) -> None:
    line = one_sentence(capsys, ["render", "--source", str(SOURCE), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-ag", "--point", "c1"])
    assert line == ("--config: unknown config key 'dsv41flash-fp4-gb300-dynamo-sglang-agentic-ag'; expected one of: " + ", ".join(master_keys())
                    + f" (did you mean dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg?) (in the master configs of {SOURCE})")
    match = one_problem(capsys, ["render", "--source", str(SOURCE), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--point", "c999"])
    assert "unknown point 'c999'" in match["msg"] and "tp4/c1" in match["msg"]
    match = one_problem(capsys, ["render", "--source", str(SOURCE), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--point", "c16"])
    assert "ambiguous" in match["msg"] and "tp2-ep2/c16" in match["msg"]


def test_bad_usage_is_exit_2_without_traceback(capsys) -> None:
    code, _, err = run_cli(capsys, ["render", "--format", "yaml"])
    assert code == 2 and "Traceback" not in err and "invalid choice" in err
