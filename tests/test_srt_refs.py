"""`--recipes`: a multi-node row's CONFIG_FILE is read from the srt-slurm checkout its runner makes, at
the ref the runner pins (runners/launch_*.sh), with srtctl's defaults of that ref; a fork, a ref the
repository lacks and a branch that moved since are refused with the ref named. Data: the excerpt in
tests/data/corpus/srt-slurm-refs (sources in its SOURCES.md), committed here to two git repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest
from conftest import CORPUS, git

from cookbookgen.cli import main
from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.master import find_point
from cookbookgen.recipes.runners import Unreadable, clone_step, follow
from cookbookgen.recipes.workspace import Workspace

DATA = CORPUS / "srt-slurm-refs"
RECIPE = "recipes/trtllm/h200/8k1k/mtp/c64_ctx1_gen1_dep8_batch32_eplb0_mtp2.yaml"
H200 = "dsr1-fp8-h200-dynamo-trt"
GB200 = "dsr1-fp8-gb200-dynamo-sglang"
SA_DAY, MAIN_DAY, IX_DAY = "2026-06-17T17:42:06+0000", "2026-08-22T03:37:28+0000", "2026-08-22T04:59:59+0000"


def _git(repo: Path, *args: str, day: str | None = None) -> str:
    return git(repo, *args, day=day or IX_DAY)


def _commit(repo: Path, folder: Path, day: str) -> str:
    for old in [p for p in repo.iterdir() if p.name != ".git"]:
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    shutil.copytree(folder, repo, dirs_exist_ok=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", folder.name, day=day)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """InferenceX (one commit) and srt-slurm: `sa-submission-q2-2026` (deb1dfd9's files), then `main` on
    top (c88ef731's), as a clone has them; `lacking`: the same without the submission branch."""
    work = tmp_path_factory.mktemp("srtrefs")
    ix = work / "inferencex"
    ix.mkdir()
    _git(ix, "init", "-q")
    _commit(ix, DATA / "inferencex", IX_DAY)
    srt = work / "srt-slurm"
    srt.mkdir()
    _git(srt, "init", "-q", "-b", "sa-submission-q2-2026")
    sa = _commit(srt, DATA / "srt-slurm" / "deb1dfd9", SA_DAY)
    _git(srt, "checkout", "-q", "-b", "main")
    head = _commit(srt, DATA / "srt-slurm" / "c88ef731", MAIN_DAY)
    lacking = work / "lacking.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--single-branch", "--branch", "main", str(srt), str(lacking)], check=True)
    return {"ix": ix, "srt": srt, "lacking": lacking, "sa": sa, "main": head}


def _point(ws: Workspace, key: str, label: str):   # noqa: ANN202 -- a ResolvedPoint
    entry = ws.entry(key)
    row, conc = find_point(entry, label)
    return ws.point(entry, row, conc)


def test_recipe_is_read_at_the_ref_the_runner_pins(repos: dict[str, Path | str]) -> None:
    """The h200 runner checks out sa-submission-q2-2026 (runners/launch_h200-dgxc-slurm.sh:107): the recipe is
    that commit's, and srtctl's default request plane there (nats) applies, not v1.0.68's tcp."""
    ws = Workspace(Path(repos["ix"]), Path(repos["srt"]))
    point = _point(ws, H200, "c64")
    assert point.recipe_path == f"srt-slurm@{str(repos['sa'])[:12]}/{RECIPE}"
    assert point.recipe.data["dynamo"] == {"install": False, "request_plane": "nats"}
    assert point.recipe.origins[("dynamo", "request_plane")] == (f"srt-slurm@{str(repos['sa'])[:12]}/src/srtctl/core/schema.py", 2)
    deployment = render_point(point, load_policy(None))
    workers = [b for b in deployment.blocks if b.kind == "worker"]
    assert [b.role for b in workers] == ["prefill", "decode"]
    for block in workers:
        assert ("--request-plane", "nats") in block.args
    frontend = next(b for b in deployment.blocks if b.kind == "dynamo-frontend")
    assert frontend.env["DYN_REQUEST_PLANE"] == "nats"
    prefill = workers[0].files["trtllm_config_prefill.yaml"]
    assert "max_num_tokens: 16640\n" in prefill and "num_nextn_predict_layers: 2\n" in prefill
    note = ws.findings()[-1]
    assert note.startswith(f"recipes read from NVIDIA/srt-slurm sa-submission-q2-2026 ({str(repos['sa'])[:12]}, "
                           "checked out by runners/launch_h200-dgxc-slurm.sh:107)")
    assert "dynamo.request_plane defaults to nats (src/srtctl/core/schema.py:2" in note


def test_a_row_the_ref_lacks_is_refused_naming_the_ref_and_checkout(repos: dict[str, Path | str]) -> None:
    ws = Workspace(Path(repos["ix"]), Path(repos["srt"]))
    with pytest.raises(CookbookError) as exc:
        _point(ws, H200, "c128")
    problem = exc.value.problems[0]
    assert (problem.file, problem.line) == ("configs/nvidia-master.yaml", 41)
    assert problem.message == (f"recipe file not found: recipes/trtllm/h200/8k1k/mtp/c128_ctx2_gen1_dep8_batch32_eplb0_mtp2.yaml in "
                               f"NVIDIA/srt-slurm sa-submission-q2-2026 ({str(repos['sa'])[:12]}, checked out by "
                               "runners/launch_h200-dgxc-slurm.sh:107) (nor in what it copies over it from the tree: "
                               "benchmarks/multi_node/srt-slurm-recipes/trtllm/h200/8k1k/mtp/c128_ctx2_gen1_dep8_batch32_eplb0_mtp2.yaml)")


def test_a_repository_without_the_pinned_ref_is_refused_naming_it(repos: dict[str, Path | str]) -> None:
    ws = Workspace(Path(repos["ix"]), Path(repos["lacking"]))
    with pytest.raises(CookbookError) as exc:
        _point(ws, H200, "c64")
    problem = exc.value.problems[0]
    assert (problem.file, problem.line) == ("configs/nvidia-master.yaml", 26)
    assert problem.message == (f"the runner checks out NVIDIA/srt-slurm sa-submission-q2-2026 (runners/launch_h200-dgxc-slurm.sh:107), "
                               f"which --recipes {repos['lacking']} does not hold: fetch that ref into it")


def test_a_fork_is_refused_by_name(repos: dict[str, Path | str]) -> None:
    """gb200's runner clones the cquil11 fork for dsr1 (runners/launch_gb200-nv.sh:549)."""
    ws = Workspace(Path(repos["ix"]), Path(repos["srt"]))
    with pytest.raises(CookbookError) as exc:
        _point(ws, GB200, "c4")
    assert exc.value.problems[0].message == ("the runner clones cquil11/srt-slurm-nv at cam/sa-submission-q2-2026 "
                                             "(runners/launch_gb200-nv.sh:549), a fork of NVIDIA/srt-slurm: not readable "
                                             "from --recipes (which is NVIDIA/srt-slurm)")


def test_a_branch_that_moved_since_the_inferencex_commit_is_refused(repos: dict[str, Path | str], tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    subprocess.run(["git", "clone", "-q", str(repos["srt"]), str(moved)], check=True)
    _git(moved, "checkout", "-q", "sa-submission-q2-2026")
    _git(moved, "commit", "-q", "--allow-empty", "-m", "later", day="2026-09-01T00:00:00+0000")
    ws = Workspace(Path(repos["ix"]), moved)
    with pytest.raises(CookbookError) as exc:
        _point(ws, H200, "c64")
    message = exc.value.problems[0].message
    assert message.startswith("the runner checks out the branch sa-submission-q2-2026 of NVIDIA/srt-slurm "
                              "(runners/launch_h200-dgxc-slurm.sh:107), which moves: its tip in --recipes (")
    assert message.endswith(", 2026-09-01) is newer than the InferenceX commit (2026-08-22); the commit it ran is not known")


def test_without_recipes_the_tree_is_read_as_before(repos: dict[str, Path | str]) -> None:
    with pytest.raises(CookbookError) as exc:
        _point(Workspace(Path(repos["ix"])), H200, "c64")
    assert exc.value.problems[0].message == f"recipe file not found: benchmarks/multi_node/srt-slurm-recipes/{RECIPE[len('recipes/'):]}"


def test_render_cli_with_recipes(repos: dict[str, Path | str], capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["render", "--source", str(repos["ix"]), "--recipes", str(repos["srt"]), "--config", H200, "--point", "c64",
                   "--role", "prefill"])
    out, err = capsys.readouterr()
    assert status == 0
    assert "--request-plane nats" in out
    assert "note: recipes read from NVIDIA/srt-slurm sa-submission-q2-2026" in err
    assert main(["render", "--source", str(repos["ix"]), "--recipes", str(DATA), "--config", H200, "--point", "c64"]) == 2
    assert "not a git repository" in capsys.readouterr().err


# --- the launchers' clone step, read from the real files ----------------------------------------------

def _clone(launcher: str, **values: str):   # noqa: ANN202 -- a Clone
    nodes, assigned = clone_step((DATA / "inferencex" / "runners" / launcher).read_text())
    base = {"IS_AGENTIC": "0", "FRAMEWORK": "", "MODEL_PREFIX": "", "PRECISION": "", "CONFIG_FILE": "", "SPEC_DECODING": "",
            "USES_DCGM_POWER": "0", "EVAL_ONLY": "false", "GITHUB_WORKSPACE": "$GITHUB_WORKSPACE", "SRT_REPO_DIR": "$SRT_REPO_DIR"}
    return follow(nodes, {**assigned, **base, **values})


@pytest.mark.parametrize(("values", "url", "ref", "overlays"), [
    ({"FRAMEWORK": "dynamo-trt", "MODEL_PREFIX": "dsr1"}, "https://github.com/NVIDIA/srt-slurm.git", "sa-submission-q2-2026", []),
    ({"IS_AGENTIC": "1", "FRAMEWORK": "dynamo-sglang", "MODEL_PREFIX": "glm5.2"}, "https://github.com/NVIDIA/srt-slurm.git", "v1.0.44", []),
    ({"IS_AGENTIC": "1", "FRAMEWORK": "dynamo-sglang", "MODEL_PREFIX": "dsv4"}, "https://github.com/NVIDIA/srt-slurm.git", "v1.0.38",
     [("recipes/sglang/deepseek-v4/agentic/agg-h200-tp8-mtp-kvoffload.yaml",
       "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/agg-h200-tp8-mtp-kvoffload.yaml")]),
    ({"IS_AGENTIC": "1", "FRAMEWORK": "vllm", "MODEL_PREFIX": "kimik3"}, "https://github.com/functionstackx/srt-slurm-nv.git",
     "df5baa93f4caf5169dea2a4236ad2cc742fe40e7",
     [("recipes/vllm/kimi-k3/agentic", "benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic")]),
    ({"IS_AGENTIC": "1", "FRAMEWORK": "dynamo-vllm", "MODEL_PREFIX": "qwen3.5"}, "https://github.com/cquil11/srt-slurm-nv.git",
     "cam/sa-submission-q2-2026", []),
])
def test_h200_launcher_clone_step(values: dict[str, str], url: str, ref: str, overlays: list[tuple[str, str]]) -> None:
    clone = _clone("launch_h200-dgxc-slurm.sh", **values)
    assert (clone.url, clone.ref, clone.overlays) == (url, ref, overlays)


def test_gb200_launcher_power_lane_and_nested_tests() -> None:
    """The dcgm-power lane clones the pinned fork (a variable assigned before the step); qwen3.5 without it
    clones NVIDIA/srt-slurm's default branch and copies the tree's recipes over it."""
    power = _clone("launch_gb200-nv.sh", FRAMEWORK="dynamo-sglang", MODEL_PREFIX="qwen3.5", USES_DCGM_POWER="1")
    assert (power.url, power.ref) == ("https://github.com/edwingao28/srt-slurm.git", "6fc1bed01a0b82dae0088a105c03ce0cfb353443")
    plain = _clone("launch_gb200-nv.sh", FRAMEWORK="dynamo-sglang", MODEL_PREFIX="qwen3.5")
    assert (plain.url, plain.ref, plain.overlays) == ("https://github.com/NVIDIA/srt-slurm.git", None,
                                                      [("recipes/sglang/qwen3.5", "benchmarks/multi_node/srt-slurm-recipes/sglang/qwen3.5")])
    agentic = _clone("launch_gb200-nv.sh", IS_AGENTIC="1", FRAMEWORK="dynamo-sglang", MODEL_PREFIX="qwen3.5", PRECISION="fp4")
    assert (agentic.ref, agentic.line) == ("v1.0.45", 426)


def test_a_step_it_cannot_follow_is_unreadable_with_its_line() -> None:
    text = ('SRT_REPO_DIR="srt-slurm"\nif [[ $FRAMEWORK == "x" ]]; then\n  git clone https://github.com/NVIDIA/srt-slurm.git "$SRT_REPO_DIR"\n'
            '  git show abc -- f | git apply -\nelse\n  git clone https://github.com/NVIDIA/srt-slurm.git "$SRT_REPO_DIR"\nfi\n'
            'echo "Installing srtctl..."\n')
    nodes, _ = clone_step(text)
    assert follow(nodes, {"FRAMEWORK": "y", "SRT_REPO_DIR": "$SRT_REPO_DIR"}).ref is None
    with pytest.raises(Unreadable) as exc:
        follow(nodes, {"FRAMEWORK": "x", "SRT_REPO_DIR": "$SRT_REPO_DIR"})
    assert exc.value.line == 4 and "git show abc -- f | git apply -" in exc.value.reason
    with pytest.raises(Unreadable) as unknown:
        follow(clone_step(text.replace("$FRAMEWORK", "$UNSET_THING"))[0], {"SRT_REPO_DIR": "$SRT_REPO_DIR"})
    assert unknown.value.line == 2 and "$UNSET_THING" in unknown.value.reason


def test_the_late_copy_of_the_trees_recipe_wins(repos: dict[str, Path | str], tmp_path: Path) -> None:
    """launch_h200-dgxc-slurm.sh copies the tree's copy of the CONFIG_FILE over the checkout's when there is one."""
    ix = tmp_path / "ix"
    shutil.copytree(DATA / "inferencex", ix)
    tree_copy = ix / "benchmarks/multi_node/srt-slurm-recipes" / RECIPE[len("recipes/"):]
    tree_copy.parent.mkdir(parents=True)
    tree_copy.write_text((DATA / "srt-slurm/c88ef731" / RECIPE).read_text())
    _git(ix, "init", "-q")
    _git(ix, "add", "-A")
    _git(ix, "commit", "-q", "-m", "ix")
    point = _point(Workspace(ix, Path(repos["srt"])), H200, "c64")
    assert PurePosixPath(point.recipe_path) == PurePosixPath("benchmarks/multi_node/srt-slurm-recipes") / RECIPE[len("recipes/"):]
    assert point.recipe.origins[("dynamo", "request_plane")][0] == point.recipe_path     # the recipe's own line, not a default


def test_a_launcher_cloning_the_version_files_ref(tmp_path: Path) -> None:
    """InferenceX 8fa3b4a3c: every launcher calls runners/srt_slurm.sh's prepare_srt_slurm_checkout, which
    clones NVIDIA/srt-slurm at configs/srt-slurm-version.txt's ref and copies the tree's recipe folders over it."""
    from cookbookgen.recipes.srtslurm import helped
    from cookbookgen.recipes.view import FolderView

    tree = tmp_path / "ix"
    shutil.copytree(DATA / "inferencex-8fa3b4a3", tree)
    for folder in ("configs", "sglang", "trtllm/kimi-k2.5/disagg/trtllm_dynamo/b200-fp4"):
        (tree / "benchmarks/multi_node/srt-slurm-recipes" / folder).mkdir(parents=True, exist_ok=True)
        (tree / "benchmarks/multi_node/srt-slurm-recipes" / folder / "marker.yaml").write_text("{}\n")
    nodes, assigned = clone_step((tree / "runners/launch_gb300-nv.sh").read_text())
    values = {"FRAMEWORK": "dynamo-trt", "MODEL_PREFIX": "dsr1", "EVAL_ONLY": "false", "GITHUB_WORKSPACE": "$GITHUB_WORKSPACE",
              "SRT_REPO_DIR": "$SRT_REPO_DIR"}
    clone = follow(nodes, {**assigned, **values})
    assert (clone.helper, clone.line, clone.url) == ("prepare_srt_slurm_checkout", 148, None)
    helped(FolderView(tree), clone)
    root = "benchmarks/multi_node/srt-slurm-recipes"
    assert (clone.url, clone.ref) == ("https://github.com/NVIDIA/srt-slurm.git", "v1.0.36")
    assert clone.overlays == [("configs", f"{root}/configs"), ("recipes/sglang", f"{root}/sglang"), ("recipes/trtllm", f"{root}/trtllm"),
                              ("recipes/trtllm/kimi-k25-nvfp4/b200-fp4", f"{root}/trtllm/kimi-k2.5/disagg/trtllm_dynamo/b200-fp4")]
    (tree / "runners/srt_slurm.sh").write_text((tree / "runners/srt_slurm.sh").read_text().replace('cp -R "$source_dir/."', 'rsync -a "$source_dir/."'))
    with pytest.raises(Unreadable) as exc:
        helped(FolderView(tree), follow(nodes, {**assigned, **values}))
    assert exc.value.line == 148 and "runners/srt_slurm.sh has no line 'cp -R" in exc.value.reason


def test_list_cli_with_recipes(repos: dict[str, Path | str], capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["list", "--source", str(repos["ix"]), "--recipes", str(repos["srt"]), "--format", "json"]) == 0
    configs = {c["key"]: c for c in json.loads(capsys.readouterr().out)["configs"]}
    c64, c128 = configs[H200]["points"]
    assert (c64["recipe"], c64["problem"]) == (f"srt-slurm@{str(repos['sa'])[:12]}/{RECIPE}", None)
    assert "recipe file not found: recipes/trtllm/h200/8k1k/mtp/c128" in c128["problem"]
    assert all("a fork of NVIDIA/srt-slurm" in p["problem"] for p in configs[GB200]["points"])


def test_a_copy_leaving_the_tree_is_unreadable() -> None:
    text = ('SRT_REPO_DIR="srt-slurm"\ngit clone https://github.com/NVIDIA/srt-slurm.git "$SRT_REPO_DIR"\n'
            'cp -rT "$GITHUB_WORKSPACE/../secrets" recipes/x\necho "Installing srtctl..."\n')
    with pytest.raises(Unreadable) as exc:
        follow(clone_step(text)[0], {"SRT_REPO_DIR": "$SRT_REPO_DIR", "GITHUB_WORKSPACE": "$GITHUB_WORKSPACE"})
    assert exc.value.line == 3 and "leaving the tree" in exc.value.reason


@pytest.mark.skipif(not (os.environ.get("INFERENCEX_TREE") and os.environ.get("SRT_SLURM_REPO")),
                    reason="set INFERENCEX_TREE (InferenceX 843c6254, a git clone with its own objects) and SRT_SLURM_REPO "
                           "(a clone or mirror of NVIDIA/srt-slurm with sa-submission-q2-2026) to read the real tree")
def test_whole_tree_rows_resolve_at_their_runners_refs() -> None:
    """On the real tree: every row naming a CONFIG_FILE renders from its runner's checkout or is refused
    with a located reason; the h200 TRT-LLM rows read sa-submission-q2-2026, the gb200 dsr1 rows are the fork's."""
    ws = Workspace(Path(os.environ["INFERENCEX_TREE"]), Path(os.environ["SRT_SLURM_REPO"]))
    sa = ws.srt.repo.named("sa-submission-q2-2026") if ws.srt else None
    assert sa is not None
    point = _point(ws, H200, "1p1d-tp8-ep8-dep8/c64")
    assert point.recipe_path == f"srt-slurm@{sa[1][:12]}/{RECIPE}"
    with pytest.raises(CookbookError, match="a fork of NVIDIA/srt-slurm"):
        _point(ws, GB200, "c4")
    checked = 0
    for key, entry in ws.entries().items():
        try:
            rows = entry.rows
        except CookbookError:               # refused at config level, as without --recipes
            continue
        for row in rows:
            if "additional-settings" not in row.recipe.where:
                continue
            try:
                ws.recipe_path(entry, row)
            except CookbookError as exc:
                problem = exc.problems[0]
                assert problem.file == "configs/nvidia-master.yaml" or problem.file == "configs/amd-master.yaml", (key, problem)
                assert problem.line > 0, (key, problem)
            checked += 1
    assert checked > 100


def test_a_vllm_worker_is_held_to_its_gpus_as_the_pinned_srtctl_does(repos: dict[str, Path | str]) -> None:
    """vLLM takes --device-ids from 0.25.0 only; srtctl passes it from v1.0.25 (`set_cuda_visible_devices`
    false), while the refs without that setting (sa-submission-q2-2026 here; v1.0.22, the aflowers/* branches
    InferenceX's dsv4 b200/b300/gb200 dynamo-vllm configs ran) set CUDA_VISIBLE_DEVICES on a worker on part of a
    node. A v1 vLLM recipe gets the pinned ref's way, with that source line as origin; an SGLang one nothing."""
    from cookbookgen.recipes.bundle import EffectiveRecipe
    from cookbookgen.recipes.runners import Clone
    from cookbookgen.recipes.srtslurm import Pin, SrtSlurm

    srt = SrtSlurm(Path(repos["srt"]))
    vllm = EffectiveRecipe("r.yaml", None, {"backend": {"type": "vllm"}}, {})
    got = {}
    for name in ("sa", "main"):
        pin = Pin("runners/launch_x.sh:1", Clone(), str(repos[name]))
        done = srt.with_defaults(pin, vllm)
        got[name] = (done.data["backend"].get("set_cuda_visible_devices"), done.origins.get(("backend", "set_cuda_visible_devices")))
        sglang = srt.with_defaults(pin, EffectiveRecipe("r.yaml", None, {"backend": {"type": "sglang"}}, {}))
        assert "set_cuda_visible_devices" not in sglang.data["backend"]
    assert got == {"sa": (True, (f"srt-slurm@{str(repos['sa'])[:12]}/src/srtctl/backends/vllm.py", 2)),
                   "main": (False, (f"srt-slurm@{str(repos['main'])[:12]}/src/srtctl/backends/vllm.py", 2))}


def test_a_vllm_dp_role_is_launched_as_the_pinned_srtctl_does(repos: dict[str, Path | str]) -> None:
    """srtctl v1.0.68 starts a vLLM data-parallel role one process per node (`dp_launch_mode: per_node`);
    v1.0.30 to v1.0.67 default to per_gpu, and older refs (sa-submission-q2-2026 here) know only one process
    per GPU. A v1 vLLM recipe that leaves the mode unset gets the pinned ref's, with that source line as origin;
    a mode the recipe sets is kept."""
    from cookbookgen.recipes.bundle import EffectiveRecipe
    from cookbookgen.recipes.runners import Clone
    from cookbookgen.recipes.srtslurm import Pin, SrtSlurm

    srt = SrtSlurm(Path(repos["srt"]))
    got = {}
    for name in ("sa", "main"):
        pin = Pin("runners/launch_x.sh:1", Clone(), str(repos[name]))
        done = srt.with_defaults(pin, EffectiveRecipe("r.yaml", None, {"backend": {"type": "vllm"}}, {}))
        got[name] = (done.data["backend"]["dp_launch_mode"], done.origins[("backend", "dp_launch_mode")])
        kept = srt.with_defaults(pin, EffectiveRecipe("r.yaml", None, {"backend": {"type": "vllm", "dp_launch_mode": "per_node"}}, {}))
        assert kept.data["backend"]["dp_launch_mode"] == "per_node"
    assert got == {"sa": ("per_gpu", (f"srt-slurm@{str(repos['sa'])[:12]}/src/srtctl/backends/vllm.py", 3)),
                   "main": ("per_node", (f"srt-slurm@{str(repos['main'])[:12]}/src/srtctl/backends/vllm.py", 3))}


def test_build_and_diff_read_the_runners_recipes_too(repos: dict[str, Path | str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A whole-checkout `build --recipes` publishes the point whose recipe lives in the runner's srt-slurm
    checkout (with that srtctl's request plane), and `diff --recipes` of that site against the same
    checkout is at parity; without --recipes the diff cannot pair it. The render cache keeps the two apart:
    a build without --recipes after one with it does not reuse its cells."""
    import json

    site, cache = tmp_path / "site", tmp_path / "cache"
    argv = ["build", "--source", str(repos["ix"]), "--out", str(site), "--cache", str(cache), "--date", "2026-12-07"]
    assert main([*argv, "--recipes", str(repos["srt"])]) == 0
    capsys.readouterr()
    published = json.dumps(json.loads((site / "cookbook.json").read_text()))
    assert f"srt-slurm@{str(repos['sa'])[:12]}/{RECIPE}" in published and '"DYN_REQUEST_PLANE": "nats"' in published
    diff = ["diff", "--cookbook", str(site), "--source", str(repos["ix"]), "--allow-unpaired"]
    assert main([*diff, "--recipes", str(repos["srt"])]) == 0
    assert capsys.readouterr().out.startswith("cookbookgen diff: PASS")
    assert main(diff) == 1
    capsys.readouterr()
    assert main(argv) == 0          # no --recipes: the runner's recipe is not found, nothing reused from the build above
    assert f"srt-slurm@{str(repos['sa'])[:12]}" not in (site / "cookbook.json").read_text()
    assert main(["build", "--recipes", str(repos["srt"]), "--out", str(tmp_path / "other")]) == 2
    assert "--recipes: only with --source" in capsys.readouterr().err
