"""Tests for cookbookgen.diff.logs: ServerArgs log lines, flag aliases, comparison, srt-slurm configs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.diff import aliases, logs
from cookbookgen.diff.logs import (
    LogDifference,
    compare_with_args,
    find_server_args,
    parse_server_args,
    parse_srtslurm_config,
)
from cookbookgen.diff.aliases import field_for_flag
from cookbookgen.errors import CookbookError
from cookbookgen.recipes.load import parse_yaml

from conftest import examples

# One decode worker's line, fields in SGLang's ServerArgs order (a subset of the ~450 fields).
REAL_LINE = (
    "[2026-10-16 08:12:01 TP0] server_args=ServerArgs("
    "model_path='deepseek-ai/DeepSeek-V4.1-Flash', tokenizer_path='deepseek-ai/DeepSeek-V4.1-Flash', "
    "tokenizer_mode='auto', tokenizer_worker_num=1, skip_tokenizer_init=False, "
    "load_format=<LoadFormat.AUTO: 'auto'>, "
    "model_loader_extra_config='{\"enable_multithread_load\":true}', trust_remote_code=True, "
    "context_length=None, is_embedding=False, revision=None, "
    "json_model_override_args='{\"num_hidden_layers\": 61, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40}}', "
    "dtype='auto', quantization='fp8', kv_cache_dtype='fp8_e4m3', mem_fraction_static=0.85, "
    "max_running_requests=256, chunked_prefill_size=16384, max_prefill_tokens=16384, schedule_policy='fcfs', "
    "schedule_conservativeness=1.0, page_size=64, swa_full_tokens_ratio=0.8, disable_radix_cache=False, "
    "dist_timeout=None, dist_init_addr='10.0.0.12:5757', nnodes=2, node_rank=0, tp_size=8, pp_size=1, "
    "dp_size=8, load_balance_method='round_robin', enable_dp_attention=True, device='cuda', base_gpu_id=0, "
    "random_seed=42, watchdog_timeout=300, numa_node=None, gc_threshold=(700, 10, 10), host='0.0.0.0', "
    "port=30000, served_model_name='deepseek-ai/DeepSeek-V4.1-Flash', "
    "chat_template='/opt/templates/it\\'s \"v4\".jinja', hf_chat_template_name=\"it's\", "
    "reasoning_parser='deepseek-v3', "
    "default_chat_template_kwargs={'thinking': True, 'reasoning_effort': 'high'}, tool_call_parser=None, "
    "log_level='info', uvicorn_access_log_exclude_prefixes=[], enable_metrics=True, "
    "bucket_inter_token_latency=[1e-05, 0.002, 0.5, inf], "
    "kv_events_config='{\"publisher\": \"zmq\", \"endpoint\": \"tcp://*:5557\", \"topic\": \"kv-events\"}', "
    "attention_backend='flashmla', fp8_gemm_runner_backend='deep_gemm', "
    "cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend=<Backend.FULL: 'full'>, max_bs=256, "
    "bs=[1, 2, 4, 8], tc_compiler=None), prefill=PhaseConfig(backend=<Backend.DISABLED: 'disabled'>, "
    "max_bs=None, bs=None, tc_compiler=None)), "
    "cuda_graph_backend_prefill='breakable', cuda_graph_max_bs_decode=256, cuda_graph_bs_decode=[1, 2, 4, 8], "
    "speculative_algorithm='DSPARK', speculative_draft_model_path=None, speculative_num_steps=3, "
    "speculative_eagle_topk=1, speculative_num_draft_tokens=4, speculative_accept_threshold_single=1.0, "
    "ep_size=8, moe_a2a_backend='deepep', moe_runner_backend='auto', deepep_mode='low_latency', "
    "ep_num_redundant_experts=32, hicache_ratio=1.02, lora_target_modules={'q_proj', 'v_proj'}, "
    "lora_paths=None, dllm_fdfo=True, disaggregation_mode='decode', disaggregation_transfer_backend='nixl', "
    "disaggregation_bootstrap_port=8998, "
    "disaggregation_ib_device='{\"0\": \"mlx5_0,mlx5_1\", \"1\": \"mlx5_2\"}', "
    "dynamic_batch_tokenizer_batch_timeout=0.002)"
)


def server_args_line(**fields: object) -> str:
    body = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return f"[2026-10-16 08:12:01 TP0] server_args=ServerArgs({body})"


# --- parse_server_args ------------------------------------------------------------------------


def test_real_line_parses_to_the_logged_values_in_order() -> None:
    parsed = parse_server_args(REAL_LINE, "decode_0.log", 12)
    assert dict(list(parsed.items())[:12]) == {
        "model_path": "deepseek-ai/DeepSeek-V4.1-Flash",
        "tokenizer_path": "deepseek-ai/DeepSeek-V4.1-Flash",
        "tokenizer_mode": "auto",
        "tokenizer_worker_num": 1,
        "skip_tokenizer_init": False,
        "load_format": "<LoadFormat.AUTO: 'auto'>",
        "model_loader_extra_config": '{"enable_multithread_load":true}',
        "trust_remote_code": True,
        "context_length": None,
        "is_embedding": False,
        "revision": None,
        "json_model_override_args": '{"num_hidden_layers": 61, "rope_scaling": {"type": "yarn", "factor": 40}}',
    }
    assert len(parsed) == 78
    assert list(parsed)[-1] == "dynamic_batch_tokenizer_batch_timeout"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("mem_fraction_static", 0.85),
        ("watchdog_timeout", 300),
        ("schedule_conservativeness", 1.0),
        ("dynamic_batch_tokenizer_batch_timeout", 0.002),
        ("hicache_ratio", 1.02),
        ("gc_threshold", (700, 10, 10)),
        ("chat_template", "/opt/templates/it's \"v4\".jinja"),
        ("hf_chat_template_name", "it's"),
        ("default_chat_template_kwargs", {"thinking": True, "reasoning_effort": "high"}),
        ("uvicorn_access_log_exclude_prefixes", []),
        ("cuda_graph_bs_decode", [1, 2, 4, 8]),
        ("lora_target_modules", {"q_proj", "v_proj"}),
        ("disaggregation_ib_device", '{"0": "mlx5_0,mlx5_1", "1": "mlx5_2"}'),
        (
            "cuda_graph_config",
            "CudaGraphConfig(decode=PhaseConfig(backend=<Backend.FULL: 'full'>, max_bs=256, bs=[1, 2, 4, 8], "
            "tc_compiler=None), prefill=PhaseConfig(backend=<Backend.DISABLED: 'disabled'>, max_bs=None, "
            "bs=None, tc_compiler=None))",
        ),
    ],
)
def test_real_line_tricky_values(field: str, expected: object) -> None:
    value = parse_server_args(REAL_LINE)[field]
    assert value == expected
    assert type(value) is type(expected)


def test_floats_keep_exponents_and_infinity() -> None:
    latency = parse_server_args(REAL_LINE)["bucket_inter_token_latency"]
    assert latency[:3] == [1e-05, 0.002, 0.5]
    assert math.isinf(latency[3]) and latency[3] > 0
    parsed = parse_server_args("ServerArgs(a=-inf, b=nan, c=-0.5, d=1.5e+20, e=-3)")
    assert parsed["a"] == -math.inf and math.isnan(parsed["b"])
    assert (parsed["c"], parsed["d"], parsed["e"]) == (-0.5, 1.5e20, -3)


def test_escapes_and_nested_containers() -> None:
    parsed = parse_server_args(
        r"""ServerArgs(s='tab\there \x41\u00e9\U0001F600 back\\slash \'q\' "dq"', """
        r"""t="it's", d={'k': [1, (2, 3), {'n': None}], 5: 'five'}, e=(), one=(1,), f=LoadFormat.AUTO, z=set())"""
    )
    assert parsed == {
        "s": "tab\there A\u00e9\U0001f600 back\\slash 'q' \"dq\"",
        "t": "it's",
        "d": {"k": [1, (2, 3), {"n": None}], 5: "five"},
        "e": (),
        "one": (1,),
        "f": "LoadFormat.AUTO",
        "z": set(),
    }


def test_elided_tail_and_prefix_text_are_tolerated() -> None:
    line = "INFO 10-16 server_args=ServerArgs(model_path='m', tp_size=4, ...) trailing words"
    assert parse_server_args(line) == {"model_path": "m", "tp_size": 4}


def test_code_in_a_value_is_never_run() -> None:
    line = "ServerArgs(a=os.system('touch /tmp/pwned'), b=1)"
    assert parse_server_args(line) == {"a": "os.system('touch /tmp/pwned')", "b": 1}
    with pytest.raises(CookbookError, match="ServerArgs.a: column 30: expected ',' or '\\)'"):
        parse_server_args("ServerArgs(a=__import__('os').system('exit 3'))")


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("ServerArgs(model_path='unterminated, tp_size=4)", "ServerArgs.model_path", "unterminated string"),
        ("ServerArgs(tp_size=4 dp_size=2)", "ServerArgs.tp_size", "expected ',' or ')'"),
        ("ServerArgs(cuda_graph_bs=[1, 2, 4)", "ServerArgs.cuda_graph_bs", "expected ',' or ']'"),
        ("ServerArgs(a={'k': [1, 2}, b=1)", "ServerArgs.a", "expected ',' or ']'"),
        ("ServerArgs(tp_size=4, dp_size=", "ServerArgs.dp_size", "expected a value"),
        ("ServerArgs(tp_size=4, dp_size=2", "ServerArgs.dp_size", "the line ends"),
        ("ServerArgs(tp_size=4, 8)", "ServerArgs", "expected a field name"),
        ("ServerArgs(tp_size=4, tp_size=8)", "ServerArgs.tp_size", "appears twice"),
        ("ServerArgs(tp_size=0x10)", "ServerArgs.tp_size", "malformed number"),
        ("ServerArgs(s='\\x4')", "ServerArgs.s", "needs 2 hex digits"),
        ("ServerArgs(e=<Enum.A: 'a')", "ServerArgs.e", "unterminated '<...>'"),
        ("ServerArgs(d={[1]: 2})", "ServerArgs.d", "not hashable"),
        ("ServerArgs(deep=" + "[" * 100 + "]" * 100 + ")", "ServerArgs.deep", "nested deeper"),
        ("no server args here", "ServerArgs", "no `ServerArgs(`"),
    ],
)
def test_malformed_lines_name_file_line_and_field(line: str, field: str, message: str) -> None:
    with pytest.raises(CookbookError) as info:
        parse_server_args(line, "logs/decode_0.err", 41)
    (problem,) = info.value.problems
    assert (problem.file, problem.line, problem.key_path) == ("logs/decode_0.err", 41, field)
    assert message in problem.message
    assert str(info.value).startswith(f"logs/decode_0.err:41: {field}: ")


field_names = st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(field_names, values, max_size=8))
def test_any_repr_keyword_list_round_trips(fields: dict[str, object]) -> None:
    parsed = parse_server_args(server_args_line(**fields))
    assert parsed == fields
    assert repr(parsed) == repr(fields)  # same types too: True is not 1, 1.0 is not 1


# --- find_server_args -------------------------------------------------------------------------


def test_find_server_args_returns_every_rank_with_its_line_number() -> None:
    text = "\n".join(
        [
            "[2026-10-16 08:11:58] Launching worker",
            server_args_line(model_path="m", tp_size=4),
            "[2026-10-16 08:12:02 TP0] Load weight begin. avail mem=180.2 GB\r",
            "[2026-10-16 08:12:03] ServerArgs.__init__ took 2 ms",
            server_args_line(model_path="m", tp_size=4, node_rank=1),
        ]
    )
    assert find_server_args(text, "prefill.log") == [
        (2, {"model_path": "m", "tp_size": 4}),
        (5, {"model_path": "m", "tp_size": 4, "node_rank": 1}),
    ]


def test_find_server_args_reports_every_malformed_line() -> None:
    text = "ServerArgs(a='x)\nok\nServerArgs(a=1, b=[)\n" + server_args_line(a=1)
    with pytest.raises(CookbookError) as info:
        find_server_args(text, "w.log")
    assert [(p.line, p.key_path) for p in info.value.problems] == [(1, "ServerArgs.a"), (3, "ServerArgs.b")]


def test_read_server_args_log_file(tmp_path: Path) -> None:
    log = tmp_path / "decode.out"
    log.write_bytes(b"\xff\xfe junk\n" + server_args_line(tp_size=2).encode() + b"\n")
    assert logs.read_server_args_log_file(log, "decode.out") == [(2, {"tp_size": 2})]
    with pytest.raises(CookbookError, match="missing.out: the file does not exist"):
        logs.read_server_args_log_file(tmp_path / "missing.out", "missing.out")


# --- flags and fields -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "field"),
    [
        ("--tp-size", "tp_size"),
        ("--tensor-parallel-size", "tp_size"),
        ("--dp-size", "dp_size"),
        ("--data-parallel-size", "dp_size"),
        ("--ep-size", "ep_size"),
        ("--expert-parallel-size", "ep_size"),
        ("--ep", "ep_size"),
        ("--pipeline-parallel-size", "pp_size"),
        ("--model", "model_path"),
        ("--nccl-init-addr", "dist_init_addr"),
        ("--speculative-draft-model", "speculative_draft_model_path"),
        ("--fp8-gemm-backend", "fp8_gemm_runner_backend"),
        ("--cuda-graph-max-bs", "cuda_graph_max_bs_decode"),
        ("--nsa-prefill-backend", "dsa_prefill_backend"),
        ("--mem-fraction-static", "mem_fraction_static"),
        ("--mem_fraction_static", "mem_fraction_static"),
        ("mem-fraction-static", "mem_fraction_static"),
    ],
)
def test_field_for_flag(flag: str, field: str) -> None:
    assert field_for_flag(flag) == field


@pytest.mark.parametrize(
    ("field", "flag"),
    [
        ("tp_size", "--tp-size"),
        ("ep_size", "--ep-size"),
        ("model_path", "--model-path"),
        ("fp8_gemm_runner_backend", "--fp8-gemm-backend"),
        ("ep_join_mode", "--elastic-ep-join-mode"),
        ("mem_fraction_static", "--mem-fraction-static"),
    ],
)
def test_the_documented_flag_names_its_field(field: str, flag: str) -> None:
    assert field_for_flag(flag) == field


def test_alias_table_is_data() -> None:
    assert {flag for flag, field in aliases.alias_table().field_of.items() if field == "ep_size"} == {"--ep-size", "--expert-parallel-size", "--ep"}
    assert not aliases.is_server_arg_flag("--request-plane")
    assert not aliases.is_server_arg_flag("--dyn-tool-call-parser")
    assert aliases.is_server_arg_flag("--tool-call-parser")


def test_alias_table_refuses_a_flag_for_two_fields() -> None:
    doc = parse_yaml(
        "fields:\n  tp_size: [--tp-size]\n  dp_size: [--tp-size]\n"
        "deprecated: {}\nswitch_constants: {}\nnot_server_args: []\nnot_server_arg_prefixes: []\n",
        "aliases.yaml",
    )
    expected = r"aliases.yaml:3: fields.dp_size\[0\]: --tp-size already names field 'tp_size'"
    with pytest.raises(CookbookError, match=expected):
        aliases.load_alias_table(doc)


# --- compare_with_args ------------------------------------------------------------------------


def test_compare_finds_the_differing_value_and_accepts_equal_spellings() -> None:
    server_args = parse_server_args(REAL_LINE)
    args = [
        ("--model-path", "deepseek-ai/DeepSeek-V4.1-Flash"),
        ("--trust-remote-code",),
        ("--tp-size", "8"),
        ("--tensor-parallel-size", "8"),
        ("--ep", "8"),
        ("--mem-fraction-static", "0.8"),
        ("--swa-full-tokens-ratio", "0.80"),
        ("--load-format", "auto"),
        ("--json-model-override-args", '{"rope_scaling": {"factor": 40, "type": "yarn"}, "num_hidden_layers": 61}'),
        ("--cuda-graph-bs", "1", "2", "4", "8"),
        ("--cuda-graph-max-bs", "256"),
        ("--enable-breakable-cuda-graph",),
        ("--speculative-draft-model", "None"),
        ("--lora-target-modules", "v_proj", "q_proj"),
        ("--default-chat-template-kwargs", '{"reasoning_effort": "high", "thinking": true}'),
        ("--enable-dp-attention",),
        ("--disable-radix-cache",),
        ("--request-plane", "tcp"),
        ("--enable-hypothetical-feature",),
    ]
    assert compare_with_args(server_args, args) == [
        LogDifference("mem_fraction_static", "--mem-fraction-static", "0.8", 0.85, "different"),
        LogDifference("disable_radix_cache", "--disable-radix-cache", True, False, "different"),
        LogDifference("request_plane", "--request-plane", "tcp", None, "not-a-server-arg"),
        LogDifference("enable_hypothetical_feature", "--enable-hypothetical-feature", True, None, "missing-in-log"),
    ]


@pytest.mark.parametrize(
    ("logged", "command"),
    [
        ({"mem_fraction_static": 0.8}, ("--mem-fraction-static", "0.80")),
        ({"tp_size": 4}, ("--tp-size", "4")),
        ({"tp_size": 4}, ("--tensor-parallel-size", "4")),
        ({"tp_size": 4}, ("--tp-size=4",)),
        ({"kv_events_config": None}, ("--kv-events-config", "null")),
        ({"kv_events_config": None}, ("--kv-events-config", "None")),
        ({"model_loader_extra_config": '{"enable_multithread_load":true}'},
         ("--model-loader-extra-config", '{"enable_multithread_load": true}')),
        ({"cuda_graph_max_bs": 256}, ("--cuda-graph-max-bs", "256")),  # an older SGLang
        ({"cuda_graph_bs": [1, 2, 4]}, ("--cuda-graph-bs", "1", "2", "4")),
        ({"cuda_graph_bs": [1, 2, 4]}, ("--cuda-graph-bs", "[1, 2, 4]")),
        ({"enable_dp_attention": True}, ("--enable-dp-attention",)),
        ({"dllm_fdfo": False}, ("--no-dllm-fdfo",)),
        ({"bucket_e2e_request_latency": [1e-05, math.inf]}, ("--bucket-e2e-request-latency", "0.00001", "inf")),
        ({"load_format": "<LoadFormat.AUTO: 'auto'>"}, ("--load-format", "auto")),
    ],
)
def test_compare_treats_equal_spellings_as_equal(logged: dict[str, object], command: tuple[str, ...]) -> None:
    assert compare_with_args(logged, [command]) == []


@pytest.mark.parametrize(
    ("logged", "command"),
    [
        ({"tp_size": 4}, ("--tp-size", "8")),
        ({"mem_fraction_static": 0.8}, ("--mem-fraction-static", "0.801")),
        ({"kv_events_config": None}, ("--kv-events-config", "{}")),
        ({"cuda_graph_bs": [1, 2, 4]}, ("--cuda-graph-bs", "1", "2")),
        ({"enable_dp_attention": False}, ("--enable-dp-attention",)),
        ({"dllm_fdfo": True}, ("--no-dllm-fdfo",)),
        ({"served_model_name": "DeepSeek"}, ("--served-model-name", "deepseek")),
        ({"json_model_override_args": '{"a": 1}'}, ("--json-model-override-args", '{"a": 2}')),
    ],
)
def test_compare_reports_real_differences(logged: dict[str, object], command: tuple[str, ...]) -> None:
    (difference,) = compare_with_args(logged, [command])
    assert difference.kind == "different"
    assert difference.logged_value == next(iter(logged.values()))


# --- srt-slurm configs ------------------------------------------------------------------------

V1_CONFIG = """\
name: dsv4-flash-gb200-1k1k
model:
  path: deepseek-ai/DeepSeek-V4.1-Flash
backend:
  type: sglang
  prefill_environment:
    SGLANG_DG_CACHE_DIR: /cache/deepgemm
    NCCL_MNNVL_ENABLE: "1"
  decode_environment:
    SGLANG_DG_CACHE_DIR: /cache/deepgemm
  sglang_config:
    prefill:
      mem_fraction_static: 0.80
      chunked-prefill-size: 16384
      trust-remote-code: true
      tp-size: 4
      cuda-graph-bs: [1, 2, 4]
    decode:
      mem-fraction-static: 0.85
      --enable-dp-attention: true
"""

SCHEMA2_CONFIG = """\
schema: 2
name: dsv4-flash-agg
roles:
  aggregated:
    args:
      model-path: deepseek-ai/DeepSeek-V4.1-Flash
      tensor_parallel_size: 8
      json-model-override-args: '{"num_hidden_layers": 61}'
    env:
      SGLANG_ENABLE_JIT_DEEPGEMM: 1
  prefill:
    args: {disaggregation-mode: prefill}
"""


def test_v1_layout() -> None:
    assert parse_srtslurm_config(V1_CONFIG, "config_1k1k.yaml") == {
        "prefill": {
            "args": {
                "--mem-fraction-static": 0.8,
                "--chunked-prefill-size": 16384,
                "--trust-remote-code": True,
                "--tp-size": 4,
                "--cuda-graph-bs": [1, 2, 4],
            },
            "env": {"SGLANG_DG_CACHE_DIR": "/cache/deepgemm", "NCCL_MNNVL_ENABLE": "1"},
        },
        "decode": {
            "args": {"--mem-fraction-static": 0.85, "--enable-dp-attention": True},
            "env": {"SGLANG_DG_CACHE_DIR": "/cache/deepgemm"},
        },
    }


def test_v1_aggregated_becomes_agg() -> None:
    text = "backend:\n  sglang_config:\n    aggregated:\n      tp: 8\n  aggregated_environment:\n    A: b\n"
    assert parse_srtslurm_config(text, "c.yaml") == {"agg": {"args": {"--tp": 8}, "env": {"A": "b"}}}


def test_schema2_layout() -> None:
    assert parse_srtslurm_config(SCHEMA2_CONFIG, "config_resolved.yaml") == {
        "agg": {
            "args": {
                "--model-path": "deepseek-ai/DeepSeek-V4.1-Flash",
                "--tensor-parallel-size": 8,
                "--json-model-override-args": '{"num_hidden_layers": 61}',
            },
            "env": {"SGLANG_ENABLE_JIT_DEEPGEMM": 1},
        },
        "prefill": {"args": {"--disaggregation-mode": "prefill"}, "env": {}},
    }


def test_srtslurm_args_compare_with_a_log() -> None:
    roles = parse_srtslurm_config(V1_CONFIG, "config_1k1k.yaml")
    args = [(flag, str(value)) for flag, value in roles["decode"]["args"].items() if value is not True]
    logged = parse_server_args(server_args_line(mem_fraction_static=0.85, enable_dp_attention=True))
    assert compare_with_args(logged, args) == []


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("roles:\n  - prefill\n", "c.yaml:1: roles:", "expected a mapping"),
        ("roles:\n  prefill:\n    args: [--tp-size, 4]\n", "c.yaml:3: roles.prefill.args:", "got list"),
        ("roles:\n  decode:\n    env:\n      PATHS: [a, b]\n", "c.yaml:4: roles.decode.env.PATHS:", "must be scalars"),
        ("roles:\n  agg: {}\n  aggregated: {}\n", "c.yaml:3: roles.aggregated:", "given twice"),
        (
            "roles:\n  decode:\n    args:\n      mem_fraction_static: 0.8\n      mem-fraction-static: 0.9\n",
            "c.yaml:5: roles.decode.args.mem-fraction-static:",
            "same flag as `mem_fraction_static`",
        ),
        ("roles:\n  decode:\n    args:\n      'tp size': 4\n", "c.yaml:4: roles.decode.args.tp size:", "not a flag"),
        ("backend:\n  sglang_config:\n    prefil: {}\n", "c.yaml:3: backend.sglang_config.prefil:", "unknown mode"),
        ("backend:\n  type: vllm\n", "c.yaml:2: backend.type:", "is not sglang"),
        ("backend:\n  type: sglang\n", "c.yaml:1: backend:", "no role has args or env"),
        ("name: x\n", "c.yaml:1: (top):", "neither `roles`"),
        ("- a\n", "c.yaml:1: (top):", "expected a mapping"),
    ],
)
def test_srtslurm_bad_shapes_name_file_line_and_key(text: str, where: str, message: str) -> None:
    with pytest.raises(CookbookError) as info:
        parse_srtslurm_config(text, "c.yaml")
    assert str(info.value).startswith(where)
    assert message in str(info.value)


def test_read_srtslurm_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config_1k1k.yaml"
    path.write_text(V1_CONFIG, encoding="utf-8")
    assert logs.read_srtslurm_config_file(path)["decode"]["args"]["--mem-fraction-static"] == 0.85
