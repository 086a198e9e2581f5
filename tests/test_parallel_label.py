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
    return f"TP{tp}" + (f"·EP{ep}" if ep > 1 else "")


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
