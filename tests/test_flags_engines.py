"""`cookbookgen flags` beyond SGLang releases (issue 33): nightlies against the releases around their date,
vLLM and the Dynamo wrappers from catalogs their own packages' source generated, successors of removed
flags, and the coverage of the published modules."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cookbookgen.cli import main
from cookbookgen.flags.catalog import basis, catalog, engines, history, releases, renames, shipped_versions, version_key
from cookbookgen.flags.check import CellCheck, check_cell
from cookbookgen.render.model import Block
from conftest import CORPUS, ROOT

SCRIPT = ROOT / "scripts" / "flag_catalogs.py"
MINI_VLLM = ROOT / "tests" / "data" / "flags" / "mini-vllm"
VLLM_27 = "vllm/vllm-openai:v0.27.1"
TRT_24 = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24"


def worker(cmd: str, *args: list[str], preamble: tuple[str, ...] = (), files: dict[str, str] | None = None) -> Block:
    return Block(kind="worker", role="agg", title="agg worker", cmd=cmd, args=tuple(tuple(a) for a in args), preamble=preamble,
                 files=files or {})


def found(check: CellCheck) -> dict[str, tuple[str, str]]:
    return {f.flag: (f.cls, f.detail) for f in check.findings if f.flag}


# --- versions, releases, renames ------------------------------------------------------------------

def test_versions_sort_as_pep_440_does() -> None:
    order = ["1.3.0.dev1", "1.3.0rc2", "1.3.0rc24", "1.3.0rc24.post1", "1.3.0", "1.3.0.post1", "1.6.0.dev20261014", "1.6.0"]
    assert sorted(reversed(order), key=version_key) == order
    assert version_key("0.5.8.post1") < version_key("0.5.9") < version_key("0.5.10")


def test_release_dates_are_the_main_line_with_their_source() -> None:
    rows = releases("sglang")
    assert [(r.version, r.date) for r in rows if r.version in ("0.5.21", "0.5.22")] == [
        ("0.5.21", dt.date(2026, 10, 1)), ("0.5.22", dt.date(2026, 10, 16))]
    assert all(r.source == f"https://pypi.org/project/sglang/{r.version}/" for r in rows)
    trt = [r.version for r in releases("tensorrt-llm")]
    assert "1.3.0rc24" in trt and "1.3.0rc5.post2" not in trt      # a backport published after rc12 brackets nothing
    assert releases("dynamo-vllm") == releases("ai-dynamo")          # the wrappers are ai-dynamo releases
    # every release the SGLang nightlies of the corpus fall between has a catalog
    assert {"0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"} <= set(shipped_versions()["sglang"])


@pytest.mark.parametrize("engine", ["sglang"])
def test_each_rename_is_borne_out_by_the_catalogs(engine: str) -> None:
    cats = history(engine)
    for old, (new, source) in renames(engine).items():
        last = max((c for c in cats if old in c.options), key=lambda c: version_key(c.version))
        after = [c for c in cats if version_key(c.version) > version_key(last.version)]
        assert after and old not in after[0].options and new in after[0].options, (old, new)
        assert last.options[old].replacement == new and source    # the last source holding the flag names the same successor


def test_removed_flags_name_their_successor() -> None:
    check = check_cell("c", "lmsysorg/sglang:v0.5.23-cu130", [worker("python3 -m sglang.launch_server", ["--nsa-prefill-backend", "fa3"],
                                                                     ["--mamba-scheduler-strategy", "auto"])])
    assert found(check) == {
        "--nsa-prefill-backend": ("removed-in", "0.5.20 (last in 0.5.19); use --dsa-prefill-backend"),
        "--mamba-scheduler-strategy": ("removed-in", "0.5.20 (last in 0.5.19); use --mamba-radix-cache-strategy")}


def test_a_rocm_build_is_bounded_by_the_release_it_names_and_the_next() -> None:
    """InferenceX's AMD configs run `lmsysorg/sglang-rocm:v0.5.16-rocm720-mi35x-20260726`: 0.5.16 is the last release on
    or before that day, so the build (the release or the main branch of the day) lies between 0.5.16 and 0.5.17, which
    both take --cuda-graph-max-bs (checked against the newest catalog it read as an ambiguous abbreviation). A tag whose
    version is not the last release before its day is not dated."""
    image = "lmsysorg/sglang-rocm:v0.5.16-rocm720-mi35x-20260726"
    check = check_cell("c", image, [worker("python3 -m sglang.launch_server", ["--cuda-graph-max-bs", "64"])])
    assert check.versions == {"sglang": "0.5.16/0.5.17"} and check.coverage == "bracket"
    assert found(check) == {"--cuda-graph-max-bs": ("deprecated", "use --cuda-graph-max-bs-decode")}
    assert engines().resolve("lmsysorg/sglang-rocm:v0.5.12-rocm720-mi35x-20260719") == (
        {}, {}, "the tag names 0.5.12 and 2026-07-19, but 0.5.12 is not the last release on or before that day, so the day does "
                "not bound the build")


def test_a_successor_is_looked_up_as_the_parsers_read_it() -> None:
    """A help text's `--a-{b,c}` names two flags, both in SGLang 0.5.19 (the published GLM-5.2 module's prefill workers
    were told 0.5.19 had neither); a wrapper's successor may be the engine's flag it hands on (dynamo.vllm's
    --connector -> vLLM's --kv-transfer-config), and is missing only when no parser of the command has it."""
    sglang = check_cell("c", "lmsysorg/sglang:v0.5.19-cu130", [worker("python3 -m sglang.launch_server", ["--disable-cuda-graph"])])
    assert found(sglang) == {"--disable-cuda-graph": ("deprecated", "use --cuda-graph-backend-{decode,prefill}=disabled")}
    pin = ('pip install "ai-dynamo==1.6.1"',)
    vllm = check_cell("c", VLLM_27, [worker("python3 -m dynamo.vllm", ["--model", "m"], ["--connector", "nixl"], preamble=pin)])
    assert found(vllm) == {"--connector": ("deprecated", "use --kv-transfer-config")}
    dynamo = check_cell("c", "lmsysorg/sglang:v0.5.23-cu130", [worker("python3 -m dynamo.sglang", ["--connector", "nixl"], preamble=pin)])
    assert found(dynamo) == {"--connector": ("deprecated", "use --kv-transfer-config, which neither ai-dynamo 1.6.1 nor sglang 0.5.23 "
                                                           "has")}


def test_basis_picks_the_releases_around_a_date_or_a_version() -> None:
    assert basis("sglang", None, dt.date(2026, 9, 13), "n").label == "sglang 0.5.19/0.5.20"
    assert basis("sglang", None, dt.date(2026, 10, 16), "n").label == "sglang 0.5.22/0.5.23"   # a release's own day: it is the lower one
    assert basis("sglang", None, dt.date(2027, 1, 1), "n").kind == "newer-than-catalogs"
    assert basis("sglang", "0.5.24", None, "n").kind == "newer-than-catalogs"
    assert basis("ai-dynamo", "1.5.0.dev20260914", None, "n").kind == "exact"
    assert basis("ai-dynamo", "1.5.0.dev20260911", None, "n").label == "ai-dynamo 1.5.0.dev20260910/1.5.0.dev20260914"  # the dev builds around it
    assert basis("tensorrt-llm", "1.3.0rc24", None, "n").kind == "unknown"      # no TensorRT-LLM catalog is shipped


# --- vLLM, from its own source ---------------------------------------------------------------------

def test_vllm_catalog_holds_what_the_wheel_says() -> None:
    cat = catalog("vllm", "0.27.1")
    assert cat is not None and cat.package == "vllm-0.27.1-cp38-abi3-manylinux_2_28_x86_64.whl" and cat.underscores and cat.dotted
    opts = cat.options
    assert opts["-tp"].name == "--tensor-parallel-size" and opts["--no-enable-prefix-caching"].nargs == 0
    assert opts["--dtype"].choices == ("auto", "bfloat16", "float", "float16", "float32", "half")
    assert opts["--served-model-name"].nargs == "+" and opts["--middleware"].nargs == 1   # FrontendArgs: nargs deleted for middleware
    assert "--max-num-partial-prefills" in catalog("vllm", "0.25.1").options and "--max-num-partial-prefills" not in opts


def test_a_vllm_command_typo_removed_and_ambiguous(tmp_path: Path) -> None:
    check = check_cell("c", VLLM_27, [worker("vllm serve deepseek-ai/DeepSeek-V4.1-Flash", ["--gpu-memory-utilisation", "0.9"],
                                             ["--max-num-partial-prefills", "2"], ["--max-num", "4"], ["--dtype", "fp64"],
                                             ["--enforce-eager", "true"], ["--max_model_len", "8192"], ["-tp", "4"],
                                             ["--compilation-config.cudagraph_mode", "FULL_DECODE_ONLY"])])
    assert check.versions == {"vllm": "0.27.1"} and check.coverage == "exact" and check.badge == "flags-fail"
    assert found(check) == {
        "--gpu-memory-utilisation": ("unknown-flag", "did you mean --gpu-memory-utilization?"),
        "--max-num-partial-prefills": ("removed-in", "0.27.1 (last in 0.25.1); no successor named"),
        "--max-num": ("ambiguous-abbreviation", "could match --max-num-batched-tokens, --max-num-scheduled-tokens, --max-num-seqs; argparse refuses it"),
        "--dtype": ("bad-choice", "fp64 is not one of: auto, bfloat16, float, float16, float32, half"),
        "--enforce-eager": ("unexpected-value", "--enforce-eager takes no value; given true")}


def test_generator_reads_a_vllm_like_package(tmp_path: Path) -> None:
    wheel = tmp_path / "vllm-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path in sorted(MINI_VLLM.rglob("*.txt")):
            z.write(path, str(path.relative_to(MINI_VLLM)).removesuffix(".txt"))
    subprocess.run([sys.executable, str(SCRIPT), "vllm", "9.9.9", "--package", str(wheel), "--out", str(tmp_path)], check=True, capture_output=True)
    doc = json.loads((tmp_path / "vllm-9.9.9.json").read_text())
    flags = doc["flags"]
    assert doc["parser"] == {"dotted": True, "underscores": True}
    assert flags["--dtype"] == {"choices": ["auto", "bfloat16", "half"], "nargs": 1}       # Literal | a non-str type: choices
    assert flags["--load"]["choices"] == ["auto", "bfloat16", "half"]                      # a Literal of a Literal alias
    assert "choices" not in flags["--tokenizer-mode"]                                       # Literal | str: any text
    assert flags["--trust-remote-code"] == {"aliases": ["--no-trust-remote-code"], "nargs": 0}
    assert flags["--enable-thing"]["nargs"] == 0                                             # **{**kwargs[...], "default": None}
    assert flags["--revision"]["nargs"] == "?"                                               # bool | str | None
    assert flags["--cuda-graph-sizes"] == {"aliases": ["-cgs"], "nargs": "+"} and flags["--pair"]["nargs"] == 2
    assert flags["--kinds"] == {"choices": ["None", "a", "b"], "nargs": "+"}                 # optional list of literals
    assert "choices" not in flags["--backend"]                                               # its type rewritten: unknown
    assert flags["--compilation-config"] == {"aliases": ["-cc"], "nargs": 1}                 # a config dataclass: one JSON value
    assert flags["--old-switch"] == {"deprecated": True, "nargs": 0, "replacement": "--trust-remote-code"}
    assert flags["--host"]["nargs"] == 1 and flags["--log-level"]["choices"] == ["debug", "info"]   # FrontendArgs and its base
    assert flags["--allowed-origins"]["nargs"] == 1                                          # nargs deleted by _customize_cli_kwargs
    assert flags["--headless"]["nargs"] == 0 and flags["--enable-log-requests"]["nargs"] == 0 and "model_tag" not in flags


# --- the Dynamo wrappers ---------------------------------------------------------------------------

def test_dynamo_trtllm_wrapper_typo_removed_ambiguous_and_old_names() -> None:
    pin = ('pip install "ai-dynamo==1.6.1"',)
    check = check_cell("c", TRT_24, [worker("python3 -m dynamo.trtllm", ["--request-plain", "tcp"], ["--publish-events-and-metrics"],
                                            ["--publish", "x"], ["--model-path", "m"], ["--trtllm.kv_cache_config.free_gpu_memory_fraction", "0.7"],
                                            preamble=pin)])
    assert check.versions["dynamo-trtllm"] == "1.6.1"
    assert found(check) == {
        "--request-plain": ("unknown-flag", "did you mean --request-plane, --event-plane, --engine-request-limit?"),
        "--publish-events-and-metrics": ("removed-in", "1.6.0.dev20261014 (last in 1.5.1); use --publish-kv-events"),  # its alias in 1.5.1
        "--publish": ("ambiguous-abbreviation", "could match --publish-kv-events, --publish-metrics; argparse refuses it"),
        "--model-path": ("deprecated", "an old name kept as an alias; use --model")}


def test_dynamo_vllm_wrapper_takes_no_abbreviation_and_names_successors() -> None:
    args = (["--disaggregation-mod", "prefill"], ["--is-prefill-worker"], ["--disaggregation-mode", "prefill"], ["--max-num-seqs", "8"])
    check = check_cell("c", VLLM_27, [worker("python3 -m dynamo.vllm", *args, preamble=('pip install "ai-dynamo==1.6.1"',))])
    assert check.versions == {"dynamo-vllm": "1.6.1", "vllm": "0.27.1"} and check.coverage == "exact"
    assert found(check) == {
        "--disaggregation-mod": ("unknown-flag", "did you mean --disaggregation-mode?"),      # allow_abbrev=False in dynamo.vllm
        "--is-prefill-worker": ("removed-in", "1.4.0 (last in 1.3.1); use --disaggregation-mode=prefill")}   # its 1.3.1 help
    older = check_cell("c", VLLM_27, [worker("python3 -m dynamo.vllm", ["--is-prefill-worker"], preamble=('pip install "ai-dynamo==1.3.1"',))])
    assert found(older) == {"--is-prefill-worker": ("deprecated", "use --disaggregation-mode=prefill")}


def test_a_trtllm_options_file_keeps_its_cell_unchecked_without_a_catalog() -> None:
    block = worker("trtllm-llmapi-launch python3 -m dynamo.trtllm", ["--model-path", "m"], ["--extra-engine-args", "prefill.yaml"],
                   preamble=('pip install "ai-dynamo==1.6.1"',), files={"prefill.yaml": "kv_cache_config:\n  dtype: fp8\n"})
    check = check_cell("c", TRT_24, [block])
    assert check.coverage == "unchecked" and check.badge == "flags-unchecked"
    assert found(check)["--extra-engine-args"] == ("unknown-version", "the options file prefill.yaml holds tensorrt-llm options: no "
                                                   "tensorrt-llm flag catalog is shipped (PyPI carries only wheel-stub sdists of TensorRT-LLM, "
                                                   "whose build downloads the wheel from pypi.nvidia.com, so no release's source could be "
                                                   "read); the NGC release tag names the TensorRT-LLM release the image ships")
    assert "tensorrt-llm: unknown" in check.summary


# --- commands, images, coverage --------------------------------------------------------------------

def test_commands_and_images_name_their_catalogs() -> None:
    table = engines()
    assert table.parsers("vllm serve deepseek-ai/DeepSeek-V4.1-Flash") == ("vllm",)
    assert table.parsers("trtllm-llmapi-launch python3 -m dynamo.trtllm") == ("dynamo-trtllm",)
    assert table.parsers("vllm-router") is None
    assert table.resolve("vllm/vllm-openai-rocm:v0.27.1")[0] == {"vllm": "0.27.1"}
    versions, dates, why = table.resolve("lmsysorg/sglang:nightly-dev-cu13-20261015-a6a8c560@sha256:0a1b")
    assert (versions, dates) == ({}, {"sglang": dt.date(2026, 10, 15), "ai-dynamo": dt.date(2026, 10, 15)}) and "commit a6a8c560" in why
    assert table.resolve("lmsysorg/sglang:nightly-dev-cu13-20261345-a6a8c560")[1] == {}    # no such day: nothing dated


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main(["flags", *argv, "--format", "json"])
    return dict(json.loads(capsys.readouterr().out))


def test_corpus_modules_are_checked_against_their_nightlies_releases(capsys: pytest.CaptureFixture[str]) -> None:
    """The published modules: every cell is checked exactly or against the releases around its nightly, except
    those no source dates (an undated tag, a Dynamo built from a commit), which say so."""
    for name in ("deepseek-ai/deepseek-v4.jsx", "zai-org/glm-5.2.jsx", "deepseek-ai/deepseek-v4_1.gb200-excerpt.jsx"):
        doc = run_json(capsys, "--cookbook", str(CORPUS / "sglang-cookbook" / "agentx" / name))
        for cell in doc["cells"]:
            notes = [b["note"] for b in cell["bases"] if b["kind"] not in ("exact", "bracket")]
            if cell["coverage"] == "unchecked":
                assert notes and all("whose tag names no full date" in n or "Dynamo built from source at commit" in n for n in notes), notes
            else:
                assert not notes and cell["checked_flags"] > 0
        assert doc["coverage"]["unchecked"] <= len(doc["cells"]) * 0.3


def test_the_dynamo_frontend_is_checked_with_the_cells_dynamo() -> None:
    frontend = Block(kind="dynamo-frontend", title="Dynamo frontend", cmd="python3 -m dynamo.frontend",
                     args=(("--http-port", "8000"), ("--router-mode", "kv"), ("--htp-port", "1")), preamble=('pip install "ai-dynamo==1.6.1"',))
    check = check_cell("c", "lmsysorg/sglang:v0.5.23-cu130", [frontend])
    assert check.versions == {"dynamo-frontend": "1.6.1"} and check.unchecked_blocks == ()
    assert found(check) == {"--htp-port": ("unknown-flag", "did you mean --http-port, --http-host?")}


def test_more_vllm_classes_against_its_own_catalogs() -> None:
    check = check_cell("c", "vllm/vllm-openai:v0.34.0", [worker("vllm serve m", ["--log-config-file", "log.json"], ["--max-num-seqs"],
                                                                ["--enable-chunked-prefil"], ["--calculate-kv-scales"])])
    assert found(check) == {
        "--log-config-file": ("deprecated", "use --logging-config"),
        "--max-num-seqs": ("missing-value", "--max-num-seqs takes one value; given none"),
        "--enable-chunked-prefil": ("abbreviation-only", "accepted only as an abbreviation of --enable-chunked-prefill"),
        "--calculate-kv-scales": ("removed-in", "0.34.0 (last in 0.27.1); no successor named")}


def test_engine_version_applies_to_the_engine_that_has_it(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--cookbook", str(ROOT / "data" / "cookbook.yaml"), "--engine-version", "0.27.1")
    versions = {c["cell"]: c["versions"] for c in doc["cells"]}
    assert versions["dsv41flash-fp4-mi325x-vllm-agentic-nixl#0"] == {"vllm": "0.27.1"}
    assert versions["dsv41flash-fp4-gb300-sglang-agentic-dspark#0"] == {"sglang": "0.5.21/0.5.22"}   # SGLang has no 0.27.1


def test_an_inferencex_recipe_names_its_dynamo_wheel_and_its_nightly_is_bracketed(capsys: pytest.CaptureFixture[str]) -> None:
    source = str(CORPUS / "inferencex")
    agg = run_json(capsys, "--source", source, "--config", "dsv4-fp4-gb300-dynamo-sglang-agentic-agg")
    assert agg["cells"][0]["versions"] == {"ai-dynamo": "1.5.0.dev20260910", "dynamo-frontend": "1.5.0.dev20260910", "sglang": "0.5.19"}
    assert agg["coverage"] == {"exact": 1, "bracket": 0, "unchecked": 0} and agg["exit"] == 0
    # The corpus's master entry (InferenceX d8e7cc8e) runs the 2026-08-29 nightly (between 0.5.18 and 0.5.19); its recipe
    # (a115decc, a later commit) passes the Mooncake linker flags, first in 0.5.20, and its identity names the 2026-09-16
    # nightly. Both releases around the master's nightly refuse them, but 0.5.20 takes them and a release can be cut
    # before it is published, so they are warnings (bracket-only), not refusals; the report names the other image.
    disagg = run_json(capsys, "--source", source, "--config", "dsv4-fp4-gb300-dynamo-sglang-agentic-disagg")
    found_classes = {(f["flag"], f["class"]) for f in disagg["cells"][0]["findings"]}
    assert ("--enable-unified-cache-external-linker", "bracket-only") in found_classes and disagg["exit"] == 0
    assert ("--enable-w4a4-mxfp4-megamoe", "bracket-only") in found_classes        # first in 0.5.19: maybe in the nightly
    assert disagg["notes"] == ["dsv4-fp4-gb300-dynamo-sglang-agentic-disagg: the master config runs "
                               "lmsysorg/sglang:nightly-dev-cu13-20260829-89816a21, but its recipe's identity names "
                               "lmsysorg/sglang:nightly-dev-cu13-20260916-c9a8fba9 (srtctl verifies the running container against it): "
                               "the flags are checked against the master's image"]
    assert agg["notes"] == []        # the agg recipe's identity names the master's image


def test_the_linker_flags_against_the_nightly_the_recipe_names() -> None:
    """The 2026-09-16 nightly the disagg recipe's identity names lies between 0.5.19 and 0.5.20: only 0.5.20 has the
    linker flags, so they may be in that build (bracket-only). The 2026-08-29 nightly lies between 0.5.18 and 0.5.19,
    which both lack them, but 0.5.20, the release after, has them: they may be in that build too."""
    args = (["--enable-unified-cache-external-linker"], ["--unified-cache-external-linker-backend", "mooncake"])
    named = check_cell("c", "lmsysorg/sglang:nightly-dev-cu13-20260916-c9a8fba9", [worker("python3 -m sglang.launch_server", *args)])
    assert named.versions == {"sglang": "0.5.19/0.5.20"} and named.badge == "flags-ok"
    assert {f: c for f, (c, _) in found(named).items()} == dict.fromkeys(("--enable-unified-cache-external-linker",
                                                                          "--unified-cache-external-linker-backend"), "bracket-only")
    master = check_cell("c", "lmsysorg/sglang:nightly-dev-cu13-20260829-89816a21", [worker("python3 -m sglang.launch_server", *args)])
    assert master.versions == {"sglang": "0.5.18/0.5.19"} and master.badge == "flags-ok"
    assert found(master)["--enable-unified-cache-external-linker"] == ("bracket-only", (
        "sglang 0.5.19 and the release before it refuse it (unknown-flag: first in 0.5.20; did you mean --enable-dsa-cache-layer-split, "
        "--enable-unified-memory, --enable-cache-report?), but sglang 0.5.20 takes it, and a release can be cut before the day it is "
        "published, so the build may have it"))


def test_a_flag_of_the_release_after_the_bracket_is_not_a_certain_refusal() -> None:
    """InferenceX ran SGLang's 2026-07-24 nightly with --mamba-max-states-per-path and reported every sample completed
    (perf-changelog entry of PR #2477, commit f7d435c61); 0.5.16, published the next day, lacks the flag (its wheel has no
    mention of it) and 0.5.17 has it. So a release's code can predate its publication: a flag both releases around the
    build refuse but the release after takes is a warning; one no release takes still stops the server."""
    image = "lmsysorg/sglang:nightly-dev-cu13-20260724-433429b1"
    check = check_cell("c", image, [worker("python3 -m sglang.launch_server", ["--mamba-max-states-per-path", "1"], ["--mamba-max-states"])])
    assert check.versions == {"sglang": "0.5.15.post1/0.5.16"} and check.badge == "flags-fail"
    # the abbreviation without its value is refused by 0.5.17 too (missing-value): a refusal by every release
    assert {f: c for f, (c, _) in found(check).items()} == {"--mamba-max-states-per-path": "bracket-only", "--mamba-max-states": "unknown-flag"}


def test_flags_of_an_undated_wrapper_are_counted_uncertain_the_engines_are_not() -> None:
    block = worker("python3 -m dynamo.sglang", ["--request-plane", "tcp"], ["--tp-size", "4"], ["--page-size", "64"],
                   preamble=("# Dynamo built from source at https://github.com/ai-dynamo/dynamo/commit/71eb001e17fa73c742f0afe1a6ed96836cb135fd",))
    check = check_cell("c", "lmsysorg/sglang:v0.5.23-cu130", [block])
    assert check.coverage == "unchecked" and (check.checked_flags, check.certain_flags) == (3, 2)   # --request-plane is Dynamo's
