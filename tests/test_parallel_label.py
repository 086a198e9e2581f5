"""`cells.describe.parallel_label`: a worker's TP/DP/EP label, read from its args in one pass. It must
read what a search for each flag finds (the first occurrence that has a value), whatever the args."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.cells.describe import parallel_label
from cookbookgen.render.model import Block

from conftest import examples

FLAGS = ["--tensor-parallel-size", "--tp-size", "--data-parallel-size", "--dp-size", "--expert-parallel-size", "--ep-size",
         "--enable-dp-attention", "--mem-fraction-static"]
ARGS = st.lists(st.tuples(st.sampled_from(FLAGS)).map(tuple) | st.tuples(st.sampled_from(FLAGS), st.sampled_from(["1", "2", "4", "8", ""])),
                max_size=8)


def _first(args: list[tuple[str, ...]], *flags: str) -> int:
    return int(next((a[1] for a in args if a[0] in flags and len(a) > 1), None) or 1)


def _expected(args: list[tuple[str, ...]]) -> str:
    tp, dp, ep = (_first(args, *FLAGS[i:i + 2]) for i in (0, 2, 4))
    dpa = any(a[0] == "--enable-dp-attention" for a in args)
    if dpa and dp == tp and ep == tp:
        return f"DEP{tp}"
    if dpa:
        return f"TP{tp}·DPA{dp}" + (f"·EP{ep}" if ep > 1 else "")
    replicas = f"·DP{dp}" if dp > 1 and ep < tp * dp else ""     # data parallel replicas, unless EP spans them
    return f"TP{tp}{replicas}" + (f"·EP{ep}" if ep > 1 else "")


@settings(max_examples=examples(300), deadline=None)
@given(args=ARGS)
def test_the_label_reads_the_first_value_of_each_parallel_size(args: list[tuple[str, ...]]) -> None:
    block = Block(kind="worker", role="agg", title="t", cmd="c", args=tuple(args))
    assert parallel_label(block) == _expected(args)


def test_labels_of_the_usual_layouts() -> None:
    def label(*args: tuple[str, ...]) -> str:
        return parallel_label(Block(kind="worker", role="decode", title="t", cmd="c", args=args))

    assert label(("--tp-size", "8"), ("--dp-size", "8"), ("--ep-size", "8"), ("--enable-dp-attention",)) == "DEP8"
    assert label(("--tensor-parallel-size", "4"), ("--tp-size", "2")) == "TP4"
    assert label(("--tp-size", "8"), ("--dp-size", "2"), ("--enable-dp-attention",)) == "TP8·DPA2"
    assert label(("--tp-size",), ("--tp-size", "2"), ("--ep-size", "2")) == "TP2·EP2"
    # vLLM: DP replicas (8 GPUs) are said unless expert parallel spans them; pipeline stages are said
    assert label(("--data-parallel-size", "8"), ("--tensor-parallel-size", "1")) == "TP1·DP8"
    assert label(("--data-parallel-size", "8"), ("--tensor-parallel-size", "1"), ("--expert-parallel-size", "8")) == "TP1·EP8"
    assert label(("--tensor-parallel-size", "8"), ("--pipeline-parallel-size", "2")) == "TP8·PP2"


# --- TensorRT-LLM and vLLM: the sizes their options say ---------------------------------------------

def _bundled_labels() -> dict[str, str]:
    from pathlib import Path

    from cookbookgen.cells.assemble import load_cookbook

    cookbook = load_cookbook(Path(__file__).resolve().parents[1] / "data" / "cookbook.yaml")
    return {p.id: c.label for page in cookbook.pages for c in page.cells for p in c.points
            if c.config_key in ("qwen3.5-fp4-gb300-dynamo-trt-agentic-disagg", "dsv41flash-fp4-mi325x-vllm-agentic-nixl")}


def test_trtllm_and_vllm_deployments_are_labelled_from_their_options() -> None:
    """The bundled TRT-LLM recipe's options (roles.*.args: tensor_parallel_size, moe_expert_parallel_size,
    enable_attention_dp) give the label in SGLang's form, as the master names the rows (1p1d-dep1-tp2-ep2,
    3p1d-dep4-dep16), not `TP1`; the vLLM recipe's --tensor-parallel-size likewise."""
    assert _bundled_labels() == {
        "1p1d-dep1-tp2-ep2/c44": "Disagg 1P1D · prefill DEP1 · decode TP2·EP2",
        "3p1d-dep4-dep16/c565": "Disagg 3P1D · prefill DEP4 · decode DEP16",
        "1p2d-tp4-tp2/c16": "Disagg 1P2D · prefill TP4 · decode TP2",
        "3p1d-tp4-tp4/c64": "Disagg 3P1D · prefill TP4 · decode TP4"}


def test_recipe_labels_read_each_engines_spelling() -> None:
    from cookbookgen.cells.describe import recipe_parallel_label

    assert recipe_parallel_label({"tensor_parallel_size": 16, "moe_expert_parallel_size": 16, "enable_attention_dp": True}) == "DEP16"
    assert recipe_parallel_label({"tensor-parallel-size": 2, "moe-expert-parallel-size": 2, "enable-attention-dp": False}) == "TP2·EP2"
    assert recipe_parallel_label({"tensor-parallel-size": 2, "data-parallel-size": 2, "enable-expert-parallel": True}) == "TP2·EP4"
    assert recipe_parallel_label({"tp": 8, "ep-size": 8, "dp": 8, "enable-dp-attention": True}) == "DEP8"
    assert recipe_parallel_label({}) == "TP1"
