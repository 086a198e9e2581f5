"""v1 srt-slurm recipes (`backend.<engine>_config`) read with srtctl v1.0.68's meaning: TRT-LLM options
files get the role's keys, vLLM workers get their args, and a setting nothing consumes is an error.
Recipes: tests/data/srtctl (copies of NVIDIA/srt-slurm c88ef731 and InferenceX 843c6254, see SOURCES.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from cookbookgen.cli import main
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.model import Block

DATA = Path(__file__).parent / "data" / "srtctl"
TRT = DATA / "recipes/trtllm/gb200-fp4/1k1k/mtp/ctx1_gen1_dep32_batch4_eplb0_mtp3.yaml"
VLLM_DISAGG = DATA / "recipes/vllm/qwen3-32b/disagg-kv-router.yaml"


def _blocks(ref: str | Path, *sets: str) -> list[Block]:
    point = Workspace(Path(".")).bare_recipe(str(ref), sets)
    return list(render(point.recipe, point.typed, RenderContext("org/model", load_policy())).blocks)


def _workers(blocks: list[Block], role: str) -> list[Block]:
    return [b for b in blocks if b.kind == "worker" and b.role == role]


def _flag(block: Block, name: str) -> str:
    [value] = [a[1] for a in block.args if a[0] == name]
    return value


def test_trtllm_options_files_hold_the_roles_trtllm_config() -> None:
    raw = yaml.safe_load(TRT.read_text())
    blocks = _blocks(TRT)
    for role in ("prefill", "decode"):
        [worker] = _workers(blocks, role)
        assert worker.files == {f"trtllm_config_{role}.yaml": yaml.safe_dump(raw["backend"]["trtllm_config"][role])}
        assert ("--extra-engine-args", f"trtllm_config_{role}.yaml") in worker.args
        for name, value in raw["backend"][f"{role}_environment"].items():
            assert worker.env[name] == str(value)


def test_vllm_workers_take_their_vllm_config_as_flags_and_srtctls_connector() -> None:
    raw = yaml.safe_load(VLLM_DISAGG.read_text())
    blocks = _workers(_blocks(VLLM_DISAGG), "prefill") + _workers(_blocks(VLLM_DISAGG), "decode")
    assert len(blocks) == 6      # 4 slots of prefill workers (6 workers), 2 decode workers beside them
    for block in blocks:
        flags = dict((a[0], a[1:]) for a in block.args)
        for key, value in raw["backend"]["vllm_config"][block.role].items():
            got = flags[f"--{key}"]
            if isinstance(value, float):        # the recipe's spelling (0.90) is kept; srtctl passes str(0.9)
                assert len(got) == 1 and float(got[0]) == value
            else:
                assert got == (() if value is True else (str(value),))
        # srtctl's `backend.connector: nixl` as its json.dumps writes it
        assert flags["--kv-transfer-config"] == ('{"kv_connector": "NixlConnector", "kv_role": "kv_both"}',)


def test_packed_decode_beside_prefill_as_srtctl_places_it() -> None:
    """6 prefill workers of 2 GPUs on 2 nodes of 8: node 1 holds four, node 2 two (GPUs 0-3); the
    2 decode workers (decode_nodes: 0) take GPUs 4,5 and 6,7 of node 2 (srtctl's allocate_endpoints)."""
    # (each block's `workers` counts the nodes it runs on: one worker per node in that slot)
    blocks = _blocks(VLLM_DISAGG)
    prefill = [(_flag(b, "--device-ids"), b.workers) for b in _workers(blocks, "prefill")]
    decode = [(_flag(b, "--device-ids"), b.workers) for b in _workers(blocks, "decode")]
    assert not [b for b in blocks if "CUDA_VISIBLE_DEVICES" in b.env]    # srtctl's vLLM pins with --device-ids
    assert prefill == [("0,1", 2), ("2,3", 2), ("4,5", 1), ("6,7", 1)]
    assert decode == [("4,5", 1), ("6,7", 1)]


def test_v1_gpus_per_worker_default_is_srtctls() -> None:
    """This recipe has no gpus_per_*: srtctl sizes a worker as its nodes x GPUs per node / workers
    (prefill 1 x 4 / 1, decode 8 x 4 / 1: one DEP32 worker over 8 nodes), not as 1 GPU."""
    point = Workspace(Path(".")).bare_recipe(str(TRT))
    assert (point.typed.roles["prefill"].gpus, point.typed.roles["decode"].gpus) == (4, 32)
    [decode] = _workers(_blocks(TRT), "decode")
    assert decode.nodes_per_worker == 8


def test_a_setting_nothing_consumes_is_a_located_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", "--recipe", str(VLLM_DISAGG), "--model", "Qwen/Qwen3-32B", "--set", "backend.mooncake_kv_store.container=example/mooncake:1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "backend.mooncake_kv_store.container: cookbookgen does not use this setting" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("engine", ["mocker", "atom", "tilert"])
def test_every_engine_srtctl_knows_renders_or_is_refused_by_name(engine: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", "--recipe", str(VLLM_DISAGG), "--model", "Qwen/Qwen3-32B", "--set", f"backend.type={engine}"])
    err = capsys.readouterr().err
    assert code == 2 and f"engine {engine!r} is not supported yet" in err and ":" in err.split(" ")[1]


def test_a_misspelt_recipe_key_is_a_located_error_naming_the_nearest_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = VLLM_DISAGG.read_text().replace("  gpus_per_node: 8", "  gpus_per_nod: 8")
    path = tmp_path / "typo.yaml"
    path.write_text(text)
    line = text.splitlines().index("  gpus_per_nod: 8") + 1
    code = main(["render", "--recipe", str(path), "--model", "Qwen/Qwen3-32B"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\\n") == 0 and err.count("\n") == 1
    assert f"{path}:{line}: resources.gpus_per_nod: unknown key 'gpus_per_nod'; did you mean 'gpus_per_node'?" in err


def test_a_set_path_that_names_nothing_is_an_error_naming_the_nearest_key(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", "--recipe", str(DATA / "inferencex/benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/"
                                        "disagg-b200-low-latency-1p1d-tp8-tp8-mtp.yaml"),
                 "--model", "deepseek-ai/DeepSeek-V4-Pro", "--set", "backend.sglang_confg.prefill.x=1"])
    err = capsys.readouterr().err
    assert code == 2 and "unknown key 'sglang_confg'; did you mean 'sglang_config'?" in err


def test_role_for_roles_in_a_schema_2_recipe_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "v2.yaml"
    path.write_text("schema: 2\nmodel: {path: 'hf:org/m'}\nresources: {gpus_per_node: 4}\n"
                    "roles:\n  agg: {args: {tensor-parallel-size: 4}}\nrole:\n  agg: {args: {max-running-requests: 8}}\n")
    code = main(["render", "--recipe", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and f"{path}:6: role: unknown key 'role'; did you mean 'roles'?" in err


KIMI = DATA / "inferencex/benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic/agg-gb200-tep16-balanced-agentic.yaml"


def test_a_duplicate_key_takes_the_last_value_and_is_reported_with_both_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """srtctl's yaml.safe_load keeps the last `compilation-config` (line 114); the one at line 104 is reported."""
    assert main(["render", "--recipe", str(KIMI), "--model", "moonshotai/Kimi-K3", "--role", "agg"]) == 0
    out, err = capsys.readouterr()
    assert f"{KIMI}:114: backend.vllm_config.aggregated.compilation-config: duplicate key; the value at line 114 is used and " \
           "the one at line 104 is ignored" in err
    assert "--compilation-config '{\"pass_config\":{\"fuse_allreduce_rms\":false}}'" in out
    assert "cudagraph_capture_sizes" not in out


def test_our_own_files_stay_strict_about_duplicate_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - {match: a, class: harness-only, reason: x}\nrules: []\n")
    assert main(["render", "--recipe", str(TRT), "--model", "org/model", "--policy", str(policy)]) == 2
    assert f"{policy}:3: rules: duplicate key (first at line 1)" in capsys.readouterr().err


def test_a_null_section_is_empty() -> None:
    path = DATA / "inferencex/benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/disagg-b300-1p1d-dep4-dep8.yaml"
    assert "  env:\n  args:" in path.read_text()       # frontend.env: null
    [front] = [b for b in _blocks(path) if b.kind == "dynamo-frontend"]
    assert ("--router-mode", "kv") in front.args


GB200 = DATA / "srt-slurm/recipes/vllm/deepseek-v4-pro/GB200/8k1k"


def test_vllm_data_parallel_runs_one_process_per_node_with_its_own_start_rank() -> None:
    """srtctl v1.0.68 (per-node DP, its default): dep16 decode on 4-GPU nodes is one process per node, each with
    4 local ranks starting at 0, 4, 8, 12, the head's DP address, and --data-parallel-hybrid-lb; no --headless."""
    blocks = _workers(_blocks(GB200 / "disagg-gb200-3p1d-dep8-dep16-c4096-offload.yaml"), "decode")
    assert [b.node_rank for b in blocks] == [0, 1, 2, 3] and {b.workers for b in blocks} == {1}
    for rank, block in enumerate(blocks):
        flags = dict((a[0], a[1:]) for a in block.args)
        assert flags["--data-parallel-size-local"] == ("4",) and flags["--data-parallel-start-rank"] == (str(4 * rank),)
        assert flags["--data-parallel-address"] == ("$DECODE_HEAD_IP",) and flags["--data-parallel-hybrid-lb"] == ()
        assert flags["--data-parallel-size"] == ("16",) and flags["--data-parallel-rpc-port"] == ("13345",)     # the recipe's
        assert not {"--headless", "--master-addr", "--nnodes", "--node-rank"} & set(flags)


def test_vllm_multi_node_worker_runs_headless_on_its_other_nodes() -> None:
    blocks = _workers(_blocks(GB200 / "disagg-gb200-1p4d-dep8-tp8-c256-c512-offload.yaml"), "decode")
    assert [(b.node_rank, b.workers) for b in blocks] == [(0, 4), (1, 4)]
    head, other = ([a for a in b.args if a[0] in ("--master-addr", "--nnodes", "--node-rank", "--headless")] for b in blocks)
    assert head == [("--master-addr", "$DECODE_HEAD_IP"), ("--nnodes", "2"), ("--node-rank", "0")]
    assert other == [("--master-addr", "$DECODE_HEAD_IP"), ("--nnodes", "2"), ("--node-rank", "1"), ("--headless",)]


def test_the_batch_job_runs_each_node_of_a_worker_once_beside_its_head(capsys: pytest.CaptureFixture[str]) -> None:
    recipe = GB200 / "disagg-gb200-1p4d-dep8-tp8-c256-c512-offload.yaml"
    assert main(["render", "--recipe", str(recipe), "--model", "org/model", "--format", "slurm"]) == 0
    starts = re.findall(r'NODE_IP="\$\{NODES\[(\d+)\]\}" [A-Z]+_HEAD_IP="\$\{NODES\[(\d+)\]\}" NODE_RANK=(\d) _start ([a-z0-9-]+) ',
                        capsys.readouterr().out)
    assert sorted(int(node) for node, *_ in starts) == list(range(10))     # 1 prefill + 4 decode workers of 2 nodes each
    head_of = {name: node for node, _, rank, name in starts if rank == "0"}
    others = [(name, node, head) for node, head, rank, name in starts if rank == "1"]
    assert len(others) == 5 and all(name.endswith("-node1") and head == head_of[name[: -len("-node1")]] != node
                                     for name, node, head in others)


def test_a_single_node_data_parallel_worker_gets_its_local_ranks() -> None:
    recipe = DATA / "inferencex/benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/8k1k/disagg-b200-1p1d-dep8-tp8-mtp.yaml"
    [prefill] = _workers(_blocks(recipe), "prefill")
    assert prefill.node_rank is None
    assert [a for a in prefill.args if a[0].startswith("--data-parallel-") and a[0] != "--data-parallel-size"] == [
        ("--data-parallel-size-local", "8"), ("--data-parallel-start-rank", "0"), ("--data-parallel-address", "$NODE_IP"),
        ("--data-parallel-rpc-port", "13345"), ("--data-parallel-hybrid-lb",)]


@pytest.mark.parametrize(("setting", "message"), [
    ("backend.vllm_config.decode.headless=true", "roles.decode.args.headless: srtctl v1.0.68 rejects headless in a data-parallel role"),
])
def test_what_per_node_data_parallel_cannot_take_is_a_located_error(setting: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = GB200 / "disagg-gb200-3p1d-dep8-dep16-c4096-offload.yaml"
    assert main(["render", "--recipe", str(recipe), "--model", "org/model", "--set", setting]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_nodes_a_role_reserves_beyond_its_packed_workers_are_told_not_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """b200-fp4 4p1d: 4 prefill workers of 4 GPUs on 4 reserved 8-GPU nodes; srtctl v1.0.68 packs them 2 per node
    on the first 2 and starts decode on the next node; the other 2 nodes hold only frontends."""
    ref = f"{DATA / 'srt-slurm/recipes/b200-fp4/8k1k.yaml'}:override_mtp_maxtpt_4p1d"
    blocks = _workers(_blocks(ref), "prefill")
    assert [(b.workers, b.env["CUDA_VISIBLE_DEVICES"], b.idle_nodes) for b in blocks] == [(2, "0,1,2,3", 2), (2, "4,5,6,7", 2)]
    assert all(b.where.endswith("the recipe reserves 4 prefill nodes and srtctl packs these workers onto the first 2, "
                                "so 2 of them run no prefill worker") for b in blocks)
    assert main(["render", "--recipe", ref, "--model", "org/model", "--format", "slurm"]) == 0
    out = capsys.readouterr().out
    assert "#SBATCH --nodes=5" in out and "# node 2: frontend-1, decode-0" in out and "# node 4: frontend-3" in out


def test_the_diff_expects_srtctls_packing_and_counts_the_idle_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The diff's own topology (not the renderer's) packs v1 workers as srtctl does, and the blocks' idle nodes
    make up the nodes the recipe reserves: no mismatch; blocks that do not tell them are a nodes mismatch."""
    from cookbookgen.diff import expect
    from cookbookgen.diff.compare import compare_point
    from cookbookgen.diff.model import PublishedPoint

    monkeypatch.setattr(expect, "model_id", lambda point: "org/model")     # the recipe names a local path (`dsr1`)
    point = Workspace(Path(".")).bare_recipe(f"{DATA / 'srt-slurm/recipes/b200-fp4/8k1k.yaml'}:override_mtp_maxtpt_4p1d")
    policy = load_policy()
    deployment = render(point.recipe, point.typed, RenderContext("org/model", policy))

    def mismatches(blocks: tuple[Block, ...]) -> list[tuple[str | None, str, str | None, str | None]]:
        published = PublishedPoint("x", "x#0", (1,), blocks, point_id=point.point_id, image=deployment.image)
        return [(f.role, f.item, f.recipe, f.cookbook) for f in compare_point(expect.point_expect(point, policy), point.recipe, published, policy)
                if f.is_mismatch]

    assert mismatches(deployment.blocks) == []
    untold = tuple(b.model_copy(update={"idle_nodes": None}) for b in deployment.blocks)
    assert mismatches(untold) == [("prefill", "nodes", "4", "2")]
