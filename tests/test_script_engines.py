"""A benchmark script's trtllm-serve or ATOM launch as a recipe (recipes/launches.py), from the record the
sandbox's stubs write (no sandbox here): each refusal is one line at the launch's script line."""

from __future__ import annotations

import pytest

from cookbookgen.errors import CookbookError
from cookbookgen.recipes.launches import recipe_from_capture
from cookbookgen.recipes.script import Capture, Launch

SCRIPT = "benchmarks/single_node/fixed_seq_len/x_fp4_b200_trt.sh"
VARIABLES = {"MODEL": "org/model", "TP": "4"}
OPTIONS = "kv_cache_config:\n    dtype: fp8\n"


def _recipe(*launches: Launch) -> dict:
    return recipe_from_capture(Capture(launches, ()), SCRIPT, VARIABLES).data


def _refusal(*launches: Launch) -> str:
    with pytest.raises(CookbookError) as refused:
        recipe_from_capture(Capture(launches, ()), SCRIPT, VARIABLES)
    return str(refused.value.problems[0])


def test_a_trtllm_serve_launch_keeps_its_flags_its_options_file_and_its_mpirun() -> None:
    launch = Launch("trtllm", 40, ("org/model", "--tp_size=4", "--extra_llm_api_options", "x.yml"), {"A": "1"},
                    ("mpirun", "-n", "1"), (("x.yml", OPTIONS),))
    data = _recipe(launch)
    assert data["engine"] == "trtllm" and data["frontend"] == {"type": "trtllm"}
    assert data["roles"]["agg"] == {"args": {"tp_size": "4"}, "env": {"A": "1"}, "gpus": 4, "options": {"kv_cache_config": {"dtype": "fp8"}},
                                    "options_file": {"flag": "--extra_llm_api_options", "name": "x.yml", "text": OPTIONS},
                                    "launcher": ["mpirun", "-n", "1"]}


def test_an_options_file_the_script_did_not_write_is_refused_at_the_launch() -> None:
    reason = _refusal(Launch("trtllm", 40, ("org/model", "--config=/etc/x.yml"), {}))
    assert reason.startswith(f"{SCRIPT}:40: script: names the LLM-API options file '/etc/x.yml' (--config), which the script does not write")


def test_an_options_file_that_is_no_yaml_mapping_is_refused() -> None:
    assert "which is not a YAML mapping" in _refusal(Launch("trtllm", 40, ("org/model", "--config", "x.yml"), {}, (), (("x.yml", "- a\n"),)))


def test_a_file_of_the_models_copy_is_the_model_dir_placeholder_in_a_flag_and_refused_in_the_options_file() -> None:
    flag = Launch("trtllm", 9, ("org/model", "--chat_template", "org/model/chat_template.jinja"), {})
    assert _recipe(flag)["roles"]["agg"]["args"] == {"chat_template": "$MODEL_DIR/chat_template.jinja"}
    written = Launch("trtllm", 9, ("org/model", "--config", "x.yml"), {}, (), (("x.yml", "speculative_model: org/model/draft\n"),))
    assert "writes 'speculative_model: org/model/draft' into its options file" in _refusal(written)


def test_an_atom_launch_keeps_short_flags_and_serves_the_configs_model() -> None:
    data = _recipe(Launch("atom", 12, ("--model", "org/model", "-tp", "4", "--kv_cache_dtype", "fp8", "--x", "-1"), {}))
    assert data["engine"] == "atom" and data["roles"]["agg"]["args"] == {"-tp": "4", "kv_cache_dtype": "fp8", "x": "-1"}
    assert "serves 'other/model' (--model), not the config's model 'org/model'" in _refusal(Launch("atom", 12, ("--model", "other/model"), {}))


def test_an_engine_under_mpirun_other_than_trtllm_serve_is_refused() -> None:
    assert "starts vLLM under mpirun" in _refusal(Launch("vllm", 5, ("org/model",), {}, ("mpirun", "-n", "1")))
