"""More malformed inputs: master configs, manifests, hostile YAML, huge and deeply nested files.

Each one: exit 2, exactly one line naming file, line and key, no traceback, nothing written.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cli import main
from cookbookgen.errors import CookbookError
from cookbookgen.recipes.load import MAX_BYTES, parse_yaml, read_yaml_file

from conftest import DATA, SOURCE
from test_bad_input import one_problem, one_sentence

AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "inferencex"
    shutil.copytree(SOURCE, root)
    return root


def _master(root: Path) -> Path:
    return root / "inferencex-e2e/configs/nvidia-master.yaml"


MASTER_EDITS = {
    "conc-list not a list": ("conc-list: [1]", "conc-list: 1", "conc-list", "non-empty list of positive integers"),
    "negative conc": ("conc-list: [4]", "conc-list: [-4]", "conc-list", "positive integers"),
    # issue 17: "use one of: tp4/c1, tp4/c1"
    "duplicate conc": ("conc-list: [1]", "conc-list: [1, 1]", "conc-list[1]", "concurrency 1 listed twice"),
    "no recipe": ("srt-recipe: recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml:override_tp4_c1", "note: none",
                  "search-space[0]", "no recipe"),
    "unknown selector": ("agg-variants.yaml:override_tp4_c1", "agg-variants.yaml:override_tp4_c999", "override_tp4_c999", "unknown selector"),
    "scenarios not a mapping": ("  scenarios:\n    agentic-coding:\n    - dram-utilization: 0.80\n      search-space:\n      - spec-decoding: dspark\n        conc-list: [1]\n",
                                "  scenarios: [1]\n  ignored:\n    agentic-coding:\n    - dram-utilization: 0.80\n      search-space:\n      - spec-decoding: dspark\n        conc-list: [1]\n",
                                "scenarios", "must be a mapping"),
    # found by tests/test_fuzz_recipes.py: a traceback, and a message split over two lines
    "additional-settings not a list": ("          tp: 4\n          ep: 1\n", "          tp: 4\n          ep: 1\n          additional-settings: true\n",
                                       "worker.additional-settings", "must be a list of KEY=VALUE strings (received bool)"),
    "recipe path too long for the system": ("srt-recipe: recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml:override_tp4_c1",
                                            "srt-recipe: " + "x" * 5000, "srt-recipe", "cannot be read: File name too long"),
    "newline in a recipe path": ("srt-recipe: recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml:override_tp4_c1",
                                 'srt-recipe: "recipes/line\\nbreak.yaml:override_tp4_c1"', "srt-recipe",
                                 "recipe file not found: inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/line\\x0abreak.yaml"),
}


@pytest.mark.parametrize("name", list(MASTER_EDITS))
def test_bad_master_config(tmp_path: Path, capsys, name: str) -> None:
    old, new, key_part, message = MASTER_EDITS[name]
    root = _checkout(tmp_path)
    master = _master(root)
    text = master.read_text()
    assert old in text
    master.write_text(text.replace(old, new, 1))
    match = one_problem(capsys, ["render", "--source", str(root), "--config", AGG, "--point", "c1"])
    assert key_part in match["key"] and message in match["msg"]


def test_a_model_name_with_a_newline_stays_in_its_comment(tmp_path: Path, capsys) -> None:
    # The script's heading names the model: a newline in it must not end the comment and run the rest.
    root = _checkout(tmp_path)
    master = _master(root)
    master.write_text(master.read_text().replace("model: deepseek-ai/DeepSeek-V4.1-Flash", 'model: "x\\n(touch /tmp/pwned)"', 1))
    assert main(["render", "--source", str(root), "--config", AGG, "--point", "c1", "--format", "sh"]) == 0
    script = capsys.readouterr().out
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert "# dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg tp4/c1: x\\x0a(touch /tmp/pwned), 4 GPUs" in script
    assert "\n(touch" not in script.replace("'x\n(touch /tmp/pwned)'", "")   # only inside the quoted --model-path value


def test_unsupported_framework(tmp_path: Path, capsys) -> None:
    root = _checkout(tmp_path)
    master = _master(root)
    master.write_text(master.read_text().replace("framework: dynamo-sglang", "framework: dynamo-llamacpp", 1))
    match = one_problem(capsys, ["render", "--source", str(root), "--config", AGG, "--point", "c1"])
    assert match["key"] == f"{AGG}.framework" and "'dynamo-llamacpp' is not supported yet" in match["msg"]


def test_a_framework_inferencex_runs_is_read_through_the_recipes_its_rows_name(tmp_path: Path, capsys) -> None:
    """Issue 31: in the current layout every framework launches through a recipe; the recipe's engine decides
    (InferenceX's refusal of sglang-disagg without a recipe, with what launches it, is in test_inferencex_scripts)."""
    root = _checkout(tmp_path)
    master = _master(root)
    master.write_text(master.read_text().replace("framework: dynamo-sglang", "framework: sglang-disagg", 1))
    assert main(["render", "--source", str(root), "--config", AGG, "--point", "c1"]) == 0
    assert "python3 -m dynamo.sglang" in capsys.readouterr().out


def test_duplicate_config_key_across_master_files(tmp_path: Path, capsys) -> None:
    root = _checkout(tmp_path)
    master = _master(root)
    (master.parent / "amd-master.yaml").write_text(master.read_text())
    match = one_problem(capsys, ["render", "--source", str(root), "--config", AGG, "--point", "c1"])
    assert "also defined in" in match["msg"]


def test_no_master_config(tmp_path: Path, capsys) -> None:
    line = one_sentence(capsys, ["render", "--source", str(tmp_path), "--config", AGG, "--point", "c1"])
    assert line.startswith(f"--source {tmp_path}: no master config in this folder: expected configs/*-master.yaml")
    line = one_sentence(capsys, ["render", "--source", str(tmp_path / "nope"), "--config", AGG, "--point", "c1"])
    assert line == f"--source {tmp_path / 'nope'}: the folder does not exist; give an InferenceX checkout (a folder with configs/*-master.yaml)"


def _manifest(tmp_path: Path, text: str) -> Path:
    shutil.copytree(SOURCE, tmp_path / "inferencex")
    path = tmp_path / "cookbook.yaml"
    path.write_text(text)
    return path


GOOD = (DATA / "cookbook.yaml").read_text()
MANIFESTS = {
    "unknown config key": (GOOD.replace("key: dsv41flash-fp4-gb300-sglang-agentic-dspark", "key: no-such-config"), "key", "unknown config key"),
    "malformed commit": (GOOD.replace("commit: e182134fd", "commit: not-a-sha"), "commit", "7 to 40 lower-case hex"),
    "duplicate config": (GOOD.replace("key: dsv41flash-fp4-gb300-sglang-agentic-dspark", "key: dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"),
                         "key", "listed twice"),
    "unknown field": (GOOD.replace("    title: DeepSeek-V4.1-Flash\n", "    titel: DeepSeek-V4.1-Flash\n"), "titel", "unknown key"),
    "metrics for no point": (GOOD.replace("tp4/c1: {throughput_per_gpu: 7846.0", "tp9/c1: {throughput_per_gpu: 7846.0"), "tp9/c1", "no single point"),
    "missing checkout": (GOOD.replace("source: inferencex", "source: nowhere"), "source", "checkout not found"),
    "bad date": (GOOD.replace("date: 2026-10-16", "date: yesterday", 1), "date", "date"),
    # issue 17: accepted silently before
    "negative pr": (GOOD.replace("pr: 4180", "pr: -4180", 1), "pr", "greater than or equal to 1"),
    "run: true": (GOOD.replace("run: 38911006463", "run: true", 1), "run", "valid integer"),
}


@pytest.mark.parametrize("name", list(MANIFESTS))
def test_bad_manifest(tmp_path: Path, name: str) -> None:
    text, key_part, message = MANIFESTS[name]
    assert text != GOOD
    path = _manifest(tmp_path, text)
    with pytest.raises(CookbookError) as info:
        load_cookbook(path)
    (problem,) = info.value.problems
    assert problem.file == str(path) and problem.line > 0
    assert key_part in problem.key_path and message in problem.message
    assert text.splitlines()[problem.line - 1].strip(), "the line points at content"


def test_huge_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("w") as f:
        line = "k" * 60 + ": " + "v" * 60 + "\n"
        for _ in range(50 * 1024 * 1024 // len(line) + 1):
            f.write(line)
    assert path.stat().st_size >= 50 * 1024 * 1024 > MAX_BYTES
    with pytest.raises(CookbookError, match=r"huge.yaml: file is \d+ bytes; the limit is"):
        read_yaml_file(path)


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    text = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(CookbookError) as info:
        parse_yaml(text, "deep.yaml")
    assert "deep.yaml" in str(info.value) and ("nesting" in str(info.value) or "deep" in str(info.value))


def test_nested_mappings_over_the_limit(tmp_path: Path) -> None:
    text = "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v\n"
    with pytest.raises(CookbookError, match="nesting deeper than 200 levels"):
        parse_yaml(text, "deep.yaml")


def test_shell_and_html_metacharacters_are_data_not_code(tmp_path: Path, capsys) -> None:
    """A hostile recipe value is quoted exactly: bash parses it back to the same word."""
    import shlex
    import subprocess

    from cookbookgen.cli import main
    from recipes_factory import dump, minimal_recipe

    evil = "$(touch /tmp/pwned); `id` <script>alert(1)</script> 'q' \"d\" \\ ; | &"
    path = tmp_path / "evil.yaml"
    path.write_text(dump(minimal_recipe(roles={"agg": {"args": {"chat-template": evil}, "env": {"EVIL": evil}}})))
    assert main(["render", "--recipe", str(path), "--role", "agg"]) == 0
    out = capsys.readouterr().out
    assert subprocess.run(["bash", "-n"], input=out, text=True).returncode == 0
    words = shlex.split(out.split("\n", 1)[1].replace("\\\n", " "))
    assert evil in words and f"EVIL={evil}" in words
