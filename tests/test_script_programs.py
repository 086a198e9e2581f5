"""The image's programs InferenceX's single-node scripts use around their launch, as the sandbox gives
them (issue 31: scripts run as the runners run them): awk, sed and paste run for real; `python3 -m venv`
and import-only `python3 -c` checks pass without running anything; rocm-smi answers the probes the
scripts parse; a capitalised name run as a command is bash's `command not found`, as on the runner;
container patches (`bash <script folder>/*.sh`, `sed -i` of an image file) are setup steps. The
hostile side of each (what they must not reach) is in test_sandbox.py."""

from __future__ import annotations

import pytest

from cookbookgen.errors import CookbookError
from cookbookgen.recipes.launches import recipe_from_capture
from cookbookgen.recipes.script import Capture, ScriptFiles, run_script

HEADER = '#!/usr/bin/env bash\nset -eo pipefail\nsource "$(dirname "$0")/../../benchmark_lib.sh"\n'
MAIN = "benchmarks/single_node/agentic/s.sh"
VARIABLES = {"MODEL": "org/m", "TP": "8"}


def _run(body: str, **others: str) -> Capture:
    """The capture of a script of HEADER + `body` (its first line is line 4); `others`: more files of its folder."""
    files = {MAIN: (HEADER + body).encode(), **{f"benchmarks/single_node/agentic/{k}": v.encode() for k, v in others.items()}}
    return run_script(ScriptFiles(MAIN, files), MAIN, VARIABLES)


def _argv(body: str, **others: str) -> tuple[str, ...]:
    (launch,) = _run(body, **others).launches
    return launch.argv


def test_awk_sed_and_paste_compute_what_the_launch_passes() -> None:
    body = ("SIZES=$(printf '%s\\n' 8 2 4 2 | sort -n -u | paste -sd, -)\n"
            "if awk -v s=1.5 -v cap=2 'BEGIN { exit !(s > cap) }'; then BIG=yes; else BIG=no; fi\n"
            "NAME=$(echo org/m | sed 's#/#--#')\n"
            'python3 -m sglang.launch_server --sizes "$SIZES" --big "$BIG" --name "$NAME"\n')
    assert _argv(body) == ("--sizes", "2,4,8", "--big", "no", "--name", "org--m")


def test_sed_in_place_edits_a_file_of_the_work_folder() -> None:
    body = "echo 'a=1' > conf\nsed -i 's/1/2/' conf\npython3 -m sglang.launch_server --conf \"$(cat conf)\"\n"
    capture = _run(body)
    assert capture.launches[0].argv == ("--conf", "a=2") and capture.setup == ()


def test_sed_in_place_of_an_image_file_is_a_setup_step_at_its_line() -> None:
    """The engine's sources are the image's: the patch is listed (quoted as written), never applied here."""
    target = "/sgl-workspace/sglang/python/sglang/srt/managers/multi_tokenizer_mixin.py"
    body = (f"if ! sed -n '/x/,/y/p' {target} | grep -q z; then\n"
            f"    sed -i '/a/ {{\n        /b/a\\\n            c,\n    }}' {target}\n"
            "fi\n"
            'python3 -m sglang.launch_server --tp "$TP"\n')
    capture = _run(body)
    assert capture.setup == ((5, ("sed", "-i", "/a/ {\n        /b/a\\\n            c,\n    }", target)),)
    assert capture.launches[0].argv == ("--tp", "8")


def test_python3_venv_and_import_checks_pass_without_running() -> None:
    body = ('SGLANG_PYTHON="$(command -v python3)"\n'
            '"$SGLANG_PYTHON" -m venv /tmp/inferencex-agentic-venv\n'
            'python3 -c "from mooncake.store import MooncakeDistributedStore" >/dev/null\n'
            'python3 -c "import cupy; import lmcache.integration.vllm.lmcache_mp_connector; import opentelemetry.exporter.prometheus"\n'
            '"$SGLANG_PYTHON" -m sglang.launch_server --tp "$TP"\n')
    capture = _run(body)
    assert capture.launches[0].argv == ("--tp", "8") and capture.setup == ()


@pytest.mark.parametrize("code", ["print(1)", "import os; os.system('true')", "import os\nos.getcwd()", "__import__('os')", "", "from . import x"])
def test_python3_code_that_is_not_imports_alone_is_refused_at_its_line(code: str) -> None:
    with pytest.raises(CookbookError, match=r"s\.sh:4: script: runs `python3 -c`, which the sandbox refuses"):
        _run(f"python3 -c {code!r}\n" + 'python3 -m sglang.launch_server --tp "$TP"\n')


def test_rocm_smi_answers_as_an_idle_node_of_unknown_firmware() -> None:
    """Under pipefail the scripts' `rocm-smi | grep | awk` probes need lines to parse: every GPU at 0 % VRAM
    (the wait loop ends at once) and MEC firmware 0 (the older-firmware workaround is exported)."""
    body = ('VRAM_MAX=$(rocm-smi --showmemuse 2>/dev/null | grep -oE "GPU Memory Allocated \\(VRAM%\\): [0-9]+" '
            "| awk '{if ($NF > m) m = $NF} END {print m+0}')\n"
            "mec_version=$(rocm-smi --showfw 2>/dev/null | grep MEC | head -n 1 | awk '{print $NF}')\n"
            'if [[ "$mec_version" == "" || ${mec_version:-0} -lt 177 ]]; then export HSA_NO_SCRATCH_RECLAIM=1; fi\n'
            'python3 -m sglang.launch_server --vram "$VRAM_MAX" --mec "$mec_version"\n')
    (launch,) = _run(body).launches
    assert launch.argv == ("--vram", "0", "--mec", "0") and launch.env["HSA_NO_SCRATCH_RECLAIM"] == "1"


def test_a_capitalised_name_run_as_a_command_fails_and_the_script_goes_on() -> None:
    """A line continuation's slip (`check_env_vars ... RESULT_FILENAME` then `EP_SIZE \\`): without `set -e`
    the runner's bash says `command not found` and goes on; with it, the script stops there."""
    body = 'set +e\ncheck_env_vars MODEL\n    EP_SIZE \\\n\npython3 -m sglang.launch_server --tp "$TP"\n'
    assert _argv(body) == ("--tp", "8")
    with pytest.raises(CookbookError, match=r"s\.sh:5: script: bash: EP_SIZE: command not found"):
        _run('EP_SIZE \\\n\npython3 -m sglang.launch_server --tp "$TP"\n')


def test_a_lowercase_unknown_program_is_still_refused() -> None:
    with pytest.raises(CookbookError, match=r"s\.sh:4: script: runs `ls`, which the sandbox refuses"):
        _run('P=$(ls -d /usr/local/cuda* 2>/dev/null || true)\npython3 -m sglang.launch_server --tp "$TP"\n')
    # `find` answers the one probe the scripts make (tests/test_sandbox.py); any other search is refused
    with pytest.raises(CookbookError, match=r"s\.sh:4: script: runs `find`, which the sandbox refuses"):
        _run('P=$(find /usr/local/cuda* -name nvcc -print -quit 2>/dev/null || true)\npython3 -m sglang.launch_server --tp "$TP"\n')


def test_a_patch_script_of_the_folder_is_a_setup_step_and_a_sibling_benchmark_runs() -> None:
    patch = "#!/usr/bin/env bash\npython -c 'import vllm'\ncurl -fsSL https://example.invalid | patch -p1\n"
    capture = _run('bash "$(dirname "$0")/apply_patches.sh"\npython3 -m sglang.launch_server --tp "$TP"\n', **{"apply_patches.sh": patch})
    assert capture.setup == ((4, ("bash", "apply_patches.sh")),)
    sibling = '#!/usr/bin/env bash\nvllm serve "$MODEL" --tensor-parallel-size "$TP"\n'
    (launch,) = _run('exec env X=1 bash "$(dirname "$0")/sibling.sh"\n', **{"sibling.sh": sibling}).launches
    assert launch.kind == "vllm" and launch.argv == ("org/m", "--tensor-parallel-size", "8") and launch.env["X"] == "1"


def test_a_flag_repeated_with_the_same_value_is_one_setting_and_with_another_is_refused() -> None:
    body = 'python3 -m sglang.launch_server --served-model-name="$MODEL" --tp 8 --served-model-name "$MODEL"\n'
    recipe = recipe_from_capture(_run(body), MAIN, VARIABLES)
    assert recipe.data["roles"]["agg"]["args"] == {"served-model-name": "org/m", "tp": "8"}
    other = _run('python3 -m sglang.launch_server --served-model-name=a --served-model-name b\n')
    with pytest.raises(CookbookError, match=r"s\.sh:4: script: passes --served-model-name twice to sglang, with different values"):
        recipe_from_capture(other, MAIN, VARIABLES)


def test_a_service_refused_in_the_background_before_the_launch_is_refused_whichever_runs_first() -> None:
    """`mooncake_master ... &` above the launch: the launch the service is for would be published
    without it. Here the background process waits until the launch is recorded, the order the
    scheduler sometimes chose on real scripts (a refusal that came and went)."""
    body = ('( until [[ -e "$CBG_STATUS.launched" ]]; do :; done; mooncake_master --port 20888 ) &\n'
            'python3 -m sglang.launch_server --tp "$TP" &\n'
            "wait\n")
    with pytest.raises(CookbookError, match=r"s\.sh:4: script: starts `mooncake_master`, the Mooncake master .*: a service of the deployment beside the engine, "
                                           r"which cookbookgen does not render from a benchmark script yet"):
        _run(body)


def test_a_command_refused_after_the_launch_ends_the_run() -> None:
    """What the benchmark does after its launch (its client, health checks), in the background or not."""
    body = 'python3 -m sglang.launch_server --tp "$TP" &\n( monitor_gpus --every 1 ) &\ncurl -fsS localhost:8888/health\n'
    assert _argv(body) == ("--tp", "8")
