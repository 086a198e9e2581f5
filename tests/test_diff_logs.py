"""`cookbookgen diff --logs`: the bundled cookbook against what the workers of a run logged.

The decode worker's `server_args=ServerArgs(...)` line below is shaped like SGLang's (field order,
enum and call reprs, nested quotes, dicts, lists, sets); it carries the cluster's own paths, addresses
and ports (ignored: site-specific) and one value that differs from the cookbook: max_running_requests=512
where the c1228 cookbook command says 384. The srt-slurm resolved config gives the prefill role
hicache-ratio 1.05 where the cookbook says 1.02.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from cookbookgen.commands.diff import run_diff
from cookbookgen.errors import CookbookError

ROOT = Path(__file__).resolve().parents[1]
DISAGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg"

DECODE_LINE = (
    "[2026-10-16 04:12:09 DP0 TP0 EP0] server_args=ServerArgs(model_path='/models/dsv41flash', "
    "tokenizer_path='/models/dsv41flash', tokenizer_mode='auto', tokenizer_worker_num=1, skip_tokenizer_init=False, "
    "load_format=<LoadFormat.AUTO: 'auto'>, model_loader_extra_config='{\"enable_multithread_load\": true}', "
    "trust_remote_code=False, context_length=None, is_embedding=False, revision=None, "
    "json_model_override_args='{}', dtype='auto', quantization=None, kv_cache_dtype='auto', "
    "host='10.52.3.17', port=30000, served_model_name='deepseek-ai/DeepSeek-V4.1-Flash', "
    "chat_template=None, hf_chat_template_name=\"it's thinking\", "
    "default_chat_template_kwargs={'thinking': True, 'reasoning_effort': 'high'}, "
    "reasoning_parser='auto', tool_call_parser='auto', mem_fraction_static=0.85, max_running_requests=512, "
    "chunked_prefill_size=8192, page_size=256, schedule_policy='fcfs', "
    "tp_size=16, pp_size=1, dp_size=16, ep_size=16, enable_dp_attention=True, enable_dp_lm_head=True, "
    "dist_init_addr='10.52.3.17:20000', nnodes=4, node_rank=0, "
    "moe_a2a_backend='megamoe', moe_runner_backend='auto', dsv4_attn_backend='flashmla', "
    "cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend=<Backend.FULL: 'full'>, max_bs=24, bs=[1, 2, 4, 8, 16, 24])), "
    "cuda_graph_max_bs_decode=24, speculative_algorithm='DSPARK', speculative_dspark_block_size=5, "
    "speculative_draft_model_path=None, speculative_draft_model_quantization=None, "
    "weight_loader_prefetch_checkpoints=True, weight_loader_drop_cache_after_load=False, "
    "enable_metrics=True, bucket_inter_token_latency=[1e-05, 0.002, 0.5, inf], lora_target_modules={'q_proj', 'v_proj'}, "
    "disaggregation_mode='decode', disaggregation_transfer_backend='mooncake', disaggregation_bootstrap_port=8998, "
    "disaggregation_decode_extra_slots=36, disaggregation_ib_device=None, kv_events_config=None, "
    "watchdog_timeout=300)"
)

RESOLVED_CONFIG = """\
name: dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg
roles:
  prefill:
    args:
      disaggregation_mode: prefill
      tensor_parallel_size: 2
      data-parallel-size: 2
      --expert-parallel-size: 2
      hicache-ratio: 1.05
      enable-metrics: true
      weight-loader-drop-cache-after-load: false
      host: 0.0.0.0
    env:
      PYTHONUNBUFFERED: "1"
      SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK: "32768"
  decode:
    args:
      max-running-requests: 384
      tensor-parallel-size: 16
    env:
      DYN_SGL_GATEWAY_WORKERS: "8"
"""


def _run(logs: Path, fmt: str = "json", config: str = DISAGG) -> tuple[int, str]:
    out = io.StringIO()
    args = argparse.Namespace(cookbook=[ROOT / "data" / "cookbook.yaml"], source=None, config=config, logs=logs, format=fmt, policy=None)
    return run_diff(args, out), out.getvalue()


@pytest.fixture()
def logs(tmp_path: Path) -> Path:
    (tmp_path / "worker-decode-0.out").write_text(
        "Loading weights...\n" + DECODE_LINE + "\n" + DECODE_LINE.replace("DP0 TP0", "DP1 TP1") + "\nready\n", encoding="utf-8")
    (tmp_path / "config_0.yaml").write_text(RESOLVED_CONFIG, encoding="utf-8")
    return tmp_path


def _log_findings(text: str) -> list[dict]:
    return [f for f in json.loads(text)["findings"] if f["kind"] == "log"]


def test_logged_value_that_differs_from_the_cookbook_is_a_mismatch(logs: Path) -> None:
    status, text = _run(logs)
    found = _log_findings(text)
    server_args = [f for f in found if f["where"].startswith("worker-decode-0.out")]
    bad = [(f["point"], f["role"], f["item"], f["cookbook"], f["recipe"]) for f in server_args if f["cls"] == "mismatch"]
    assert bad == [("4p1d-dep2-dep16/c1228", "decode", "--max-running-requests", "384", "512")]
    assert status == 1


def test_server_args_flags_are_compared_through_aliases_and_site_values_skipped(logs: Path) -> None:
    found = [f for f in _log_findings(_run(logs)[1]) if f["where"].startswith("worker-decode-0.out")]
    matched = {f["item"] for f in found if f["cls"] == "match"}
    assert {"--tensor-parallel-size", "--data-parallel-size", "--model-loader-extra-config", "--nnodes",
            "--weight-loader-prefetch-checkpoints", "--mem-fraction-static"} <= matched
    assert not {"--host", "--port", "--model-path", "--dist-init-addr", "--node-rank", "--request-plane"} & {f["item"] for f in found}
    assert len({f["where"] for f in found}) == 1  # the second rank's identical line is compared once


def test_resolved_srtslurm_config_is_compared_role_by_role(logs: Path) -> None:
    found = [f for f in _log_findings(_run(logs)[1]) if f["where"] == "config_0.yaml"]
    bad = [(f["role"], f["item"], f["recipe"], f["cookbook"]) for f in found if f["cls"] == "mismatch"]
    assert bad == [("prefill", "--hicache-ratio", "1.05", "1.02")]
    assert {f["item"] for f in found} >= {"--disaggregation-mode", "--tensor-parallel-size", "--expert-parallel-size",
                                         "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK", "DYN_SGL_GATEWAY_WORKERS"}
    assert not {"--enable-metrics", "PYTHONUNBUFFERED", "--host", "--weight-loader-drop-cache-after-load"} & {f["item"] for f in found}


def test_markdown_report_lists_the_log_mismatch_first(logs: Path) -> None:
    status, text = _run(logs, "markdown")
    assert status == 1
    assert "`--max-running-requests` log: different value: the worker ran max_running_requests=512" in text


def test_a_malformed_server_args_line_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "worker.err").write_text("x server_args=ServerArgs(model_path='/m', tp_size=4, port=)\n", encoding="utf-8")
    with pytest.raises(CookbookError) as err:
        _run(tmp_path)
    assert str(err.value).startswith("worker.err:1: ServerArgs.port: column")


def test_a_directory_without_logs_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here\n", encoding="utf-8")
    with pytest.raises(CookbookError, match="no `server_args=ServerArgs"):
        _run(tmp_path)


def test_a_server_args_line_that_verifies_nothing_is_not_parity(tmp_path: Path) -> None:
    # Issue 17: `ServerArgs(foo=1)` left every flag unverified and the diff reported parity (exit 0).
    (tmp_path / "worker.err").write_text("x server_args=ServerArgs(foo=1)\n", encoding="utf-8")
    status, text = _run(tmp_path, config="dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg")
    found = _log_findings(text)
    assert status == 1
    assert [(f["cls"], f["item"], f["where"]) for f in found] == [("mismatch", "ServerArgs", "worker.err:1")]
    assert "verifies nothing" in found[0]["detail"]
