"""A YAML syntax error is reported at PyYAML's own line (its problem mark), in every kind of YAML file.

Bug (issue 23): an error on line 51 of a manifest was reported at line 9, the line where the
enclosing block mapping started (the context mark), not where PyYAML found the problem.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from cookbookgen.cli import main
from conftest import DATA

E2E = "inferencex/inferencex-e2e"
MASTER = f"{E2E}/configs/nvidia-master.yaml"
CHANGELOG = f"{E2E}/perf-changelog.yaml"
RECIPE = f"{E2E}/benchmarks/single_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4-mtp/agentic.yaml"
MAPPING_TAIL = "- stray list item under a mapping\n"     # PyYAML: block mapping begun at line 1, problem here
LIST_TAIL = "stray: key under a list\n"                 # PyYAML: block sequence begun at line 2, problem here


def pyyaml_line(text: str) -> int:
    with pytest.raises(yaml.MarkedYAMLError) as info:
        yaml.safe_load(text)
    mark = info.value.problem_mark
    assert mark is not None
    return mark.line + 1


def corrupt(path: Path, tail: str) -> int:
    """Append `tail` to the file; PyYAML's reported line for the result."""
    text = path.read_text(encoding="utf-8") + tail
    path.write_text(text, encoding="utf-8")
    return pyyaml_line(text)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "data")
    return tmp_path / "data"


def error_line(capsys: pytest.CaptureFixture[str], argv: list[str], file_name: str) -> int:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    found = re.fullmatch(r"cookbookgen: error: (\S+):(\d+): \(top\): YAML syntax: .*", err)
    assert found is not None, err
    assert found.group(1).endswith(file_name)
    return int(found.group(2))


def test_manifest(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = corrupt(copy / "cookbook.yaml", MAPPING_TAIL)
    assert want > 40
    assert error_line(capsys, ["list", "--cookbook", str(copy / "cookbook.yaml")], "cookbook.yaml") == want


def test_master_config(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = corrupt(copy / MASTER, MAPPING_TAIL)
    argv = ["render", "--source", str(copy / "inferencex"), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--point", "tp4/c16"]
    assert error_line(capsys, argv, "nvidia-master.yaml") == want


def test_master_config_in_diff(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`diff` may parse the master config entry by entry: the line is the same."""
    want = corrupt(copy / MASTER, MAPPING_TAIL)
    assert error_line(capsys, ["diff", "--cookbook", str(copy / "cookbook.yaml")], "nvidia-master.yaml") == want


def test_recipe(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = corrupt(copy / RECIPE, MAPPING_TAIL)
    assert error_line(capsys, ["render", "--recipe", str(copy / RECIPE)], "agentic.yaml") == want


def test_changelog(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = corrupt(copy / CHANGELOG, LIST_TAIL)
    assert error_line(capsys, ["diff", "--cookbook", str(copy / "cookbook.yaml")], "perf-changelog.yaml") == want


def test_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    text = "rules:\n" + "".join(f"  - {{match: env.X{i}, class: published, reason: test}}\n" for i in range(30)) + "clusters: {}\n"
    policy.write_text(text)
    want = corrupt(policy, MAPPING_TAIL)
    argv = ["render", "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--point", "tp4/c16", "--policy", str(policy)]
    assert error_line(capsys, argv, "policy.yaml") == want


BASE = "a:\n  b: 1\n  c: [1, 2]\nd: x\n"
SNIPPETS = {
    "sequence item under a mapping": BASE + "- x\n",
    "unclosed flow sequence": BASE + "e: [1, 2\nf: 3\n",
    "unclosed flow mapping": BASE + "e: {a: 1\n",
    "unclosed quote": BASE + "e: 'abc\nf: 3\n",
    "tab indent": BASE + "e:\n\tf: 1\n",
    "over-indented key": BASE + "e: 1\n   f: 2\n",
    "undefined alias": BASE + "e: *nope\n",
    "colon in a plain scalar": BASE + "e: a: b\n",
    "stray bracket": BASE + "e: ]\n",
    "content after document end": BASE + "...\nx\n- y\n",
    "bad escape": BASE + 'e: "\\q"\n',
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_parser_line_is_pyyamls(name: str) -> None:
    from cookbookgen.errors import CookbookError
    from cookbookgen.recipes.load import parse_yaml

    with pytest.raises(CookbookError) as info:
        parse_yaml(SNIPPETS[name], "f.yaml")
    (problem,) = info.value.problems
    assert problem.message.startswith("YAML syntax: ")
    assert problem.line == pyyaml_line(SNIPPETS[name])
