# Sourced (through BASH_ENV) before an InferenceX single-node benchmark script runs in the sandbox
# of cookbookgen.recipes.script. It stands in for everything the script would reach outside itself:
# - `source .../benchmark_lib.sh` reads the stubs below instead of InferenceX's library;
# - engine launches are recorded in "$CBG_CAPTURE.<process id>" (one file per process, as launches
#   may run in background subshells; NUL-separated: LAUNCH, kind, line, argc, argv..., the exported
#   environment as `env -0` prints it, END) and never executed;
# - the setup steps the scripts run before serving are no-ops: `hf download` (weights), `nvidia-smi`,
#   `rocm-smi`, `amd-smi` (GPU inventory), `sleep`; `python3 <script folder>/*.py` (kernel-config
#   installs), `pip install` / `pip3 install` / `python3 -m pip install` and benchmark_lib.sh's
#   `agentic_pip_install` (package installs) are recorded as SETUP;
# - any other command that is not a builtin or a command of the sandbox's PATH is recorded in
#   "$CBG_DENIED" (line and name) and ends the script; once an engine launch is recorded, such a
#   command ends the run instead (status 0, nothing denied): what the benchmark does after its
#   launch (health checks, pip, curl, rocm-smi, the client) does not change what was launched (a
#   background process started above the launch is not after it: see _cbg_refused);
# - the launch forms the scripts use: `python3 -m sglang.launch_server`, `sglang serve`,
#   `python3 -m sglang_router.launch_router`, `vllm serve`, `trtllm-serve` (alone or under `mpirun`),
#   `python3 -m atom.entrypoints.openai_server`, `python3 -m dynamo.*`, each also behind `nohup`,
#   `timeout`, `exec`, `env NAME=VALUE ...` or `numactl`; the vLLM router `vllm-router`;
# - the image's programs around the launch (end of this file): awk, sed, paste run for real (allowed
#   programs); python3 checks, rocm-smi probes and image patches as described there;
# - probes of the container or machine (`find -name ptxas`, `hostname`, `df --output=avail`) answer
#   with the placeholder the published command shows, never a value of the host.
# Ports are fixed: PORT is InferenceX's default 8888 (benchmark-tmpl.yml), never probed.
# The script's `/workspace` paths point at "$HOME/workspace" (cookbookgen.recipes.launches), made here.
# Nothing here opens a file outside the sandbox's folder or a socket.

# The line of the script's last command, for the errors Python reports: not of these handlers, and
# not the other line bash gives the last command once more as it starts a trap (so a command
# repeated on the next lines is reported at its first line).
trap '[[ $BASH_COMMAND == _cbg_* || $BASH_COMMAND == "$CBG_COMMAND" ]] || { CBG_LINE=$LINENO; CBG_COMMAND=$BASH_COMMAND; }' DEBUG
# Any command of the script that fails, whether or not the script stops (`set -e` or not).
trap '_cbg_failed' ERR
# On exit: the status and the last line run, once the launches in background subshells are recorded.
trap '_cbg_exit' EXIT
trap '_cbg_stop 124' TERM   # the time limit
trap '_cbg_stop 125' XFSZ   # the size limit: a write went over it

_cbg_stop() { exit "$1"; }
command mkdir -p "$HOME/workspace"
_cbg_failed() {
    local rc=$?
    # bash's `command not found` for a capitalised name (command_not_found_handle): the runner goes on as well
    [[ $rc == 127 && "${BASH_COMMAND%% *}" =~ ^[A-Z][A-Z0-9_]*$ ]] && return
    printf '%s %s\n' "$rc" "${CBG_LINE:-0}" >> "$CBG_FAILED"
}
_cbg_exit() {
    CBG_RC=$?
    builtin trap - ERR      # the status is recorded here; what the script's own EXIT handler runs next is not the run
    wait
    printf '%s %s\n' "$CBG_RC" "${CBG_LINE:-0}" > "$CBG_STATUS"
}
_cbg_rc() { return "$CBG_RC"; }   # the script's own EXIT handler, run next, sees the status the script exited with

# A script's own EXIT handler runs after cookbookgen's (which waits for the launches its background
# subshells are recording); its handlers for other signals are set as given.
trap() {
    if (( $# < 2 )) || [[ "$1" == -[!-]* ]]; then
        builtin trap "$@"
        return
    fi
    local command="$1" signal others=()
    shift
    for signal in "$@"; do
        if [[ "$signal" == EXIT || "$signal" == 0 ]]; then
            if [[ "$command" == - ]]; then builtin trap '_cbg_exit' EXIT; else builtin trap "_cbg_exit; _cbg_rc; $command" EXIT; fi
        else
            others+=("$signal")
        fi
    done
    if (( ${#others[@]} )); then builtin trap "$command" "${others[@]}"; fi
}

# A refused command: recorded, then the script's own shell stops (USR2) once the launches of its
# background subshells are written; with a launch recorded before it, the run ends there instead,
# unless the command ran in a background process started before the launch (a line above the first
# launch's: a service the launch needs, such as `mooncake_master ... &`, whose refusal would otherwise
# depend on which process the scheduler ran first).
trap '_cbg_refused' USR2
_cbg_refused() {
    wait
    if [[ -e "$CBG_STATUS.launched" ]] && ! _cbg_background_before_launch; then
        : > "$CBG_DENIED"
        exit 0
    fi
    exit 126
}
_cbg_background_before_launch() {
    local line first=
    while read -r line; do [[ -z "$first" || $line -lt $first ]] && first=$line; done < "$CBG_STATUS.launched"
    [[ -e "$CBG_STATUS.background" ]] || return 1
    while read -r line; do (( line < first )) && return 0; done < "$CBG_STATUS.background"
    return 1
}
_cbg_denied() {   # line, command
    printf '%s %s\n' "$1" "$2" >> "$CBG_DENIED"
    (( BASH_SUBSHELL == 0 )) || printf '%s\n' "$1" >> "$CBG_STATUS.background"
    kill -USR2 "$$"
}

command_not_found_handle() {
    if [[ "$1" =~ ^[A-Z][A-Z0-9_]*$ ]]; then     # no image ships such a program: a variable's name left as a command
        printf '%s: line %s: %s: command not found\n' "$0" "${BASH_LINENO[0]}" "$1" >&2     # (a line continuation's slip):
        return 127                                                                       # bash's answer, as on the runner
    fi
    _cbg_denied "${BASH_LINENO[0]}" "$1"
    return 0
}

source() {
    case "$1" in
        */benchmark_lib.sh)                   # the stubs below are already defined
            # as benchmark_lib.sh does: agentic replays run at the model's own context limit
            if [[ "${IS_AGENTIC:-0}" == 1 || "${SCENARIO_TYPE:-}" == agentic-coding ]]; then unset MAX_MODEL_LEN; fi
            return 0 ;;
        *) builtin source "$@" ;;
    esac
}

# CBG_WHERE: the script's line of the command being stubbed: the line of the first caller outside
# these stubs (nohup, exec, mpirun, pip3... add frames).
_cbg_where() {
    local depth=1
    while [[ "${FUNCNAME[depth]:-}" == @(_cbg_*|python3|python|vllm|sglang|sglang_router|trtllm-serve|mpirun|nohup|setsid|timeout|exec|env|numactl|pip|pip3|agentic_pip_install|bash|sed|vllm-router|find|hostname|df|mooncake_master|lmcache) ]] \
          && (( depth + 1 < ${#FUNCNAME[@]} )); do
        depth=$((depth + 1))
    done
    CBG_WHERE="${BASH_LINENO[depth - 1]}"
}

_cbg_launch() {   # kind, then the launch's argv (without the program that starts it)
    local kind="$1"
    shift
    _cbg_where
    # the runners' container work folder (/workspace, also the folder the scripts run in), as the script names it
    set -- "${@//"$HOME"\/workspace//workspace}"
    set -- "${@//"$HOME"//workspace}"
    local pair
    {
        # the `mpirun` words it runs under (CBG_MPIRUN, a local of the mpirun stub), and the LLM-API
        # options file a trtllm-serve launch names, as the script wrote it (FILE, its name, its text)
        if [[ -n "${CBG_MPIRUN+set}" ]]; then printf '%s\0' WRAP "${#CBG_MPIRUN[@]}" "${CBG_MPIRUN[@]}"; fi
        if [[ "$kind" == trtllm ]]; then _cbg_options_file "$@"; fi
        printf '%s\0' LAUNCH "$kind" "$CBG_WHERE" "$#" "$@"
        # a pipe, not `< <(...)`: the sandbox has no /dev/fd for a process substitution
        command env -0 | while IFS= read -r -d '' pair; do
            case "$pair" in
                CBG_*=* | HOME=* | PATH=* | BASH_ENV=*) ;;        # the sandbox's own: left as they are (not the script's)
                *) pair="${pair//"$HOME"\/workspace//workspace}"; pair="${pair//"$HOME"//workspace}" ;;
            esac
            printf '%s\0' "$pair"
        done
        printf 'END\0'
    } >> "$CBG_CAPTURE.$BASHPID"
    printf '%s\n' "$CBG_WHERE" >> "$CBG_STATUS.launched"
}

# FILE records of the options files a trtllm-serve argv names (--extra_llm_api_options, --config;
# `=VALUE` or the next word), each a regular file the script wrote: name as given, then the bytes.
_cbg_options_file() {
    local word name previous=""
    for word in "$@"; do
        name=""
        case "$word" in
            --extra_llm_api_options=* | --config=*) name="${word#*=}" ;;
            *) [[ "$previous" == --extra_llm_api_options || "$previous" == --config ]] && name="$word" ;;
        esac
        previous="$word"
        [[ -n "$name" && -f "$name" ]] || continue
        printf '%s\0' FILE "${name//"$HOME"\/workspace//workspace}"
        command cat -- "$name"
        printf '\0'
    done
}

# A setup step (argv) before the launch; after a recorded launch, the run has ended.
_cbg_setup() {
    if [[ -e "$CBG_STATUS.launched" ]]; then
        kill -USR2 "$$"
        return 0
    fi
    _cbg_where
    printf '%s\0' SETUP "$CBG_WHERE" "$#" "$@" >> "$CBG_CAPTURE.$BASHPID"
}

_cbg_deny() {
    _cbg_where
    _cbg_denied "$CBG_WHERE" "$*"
}

python3() {
    while [[ "${1:-}" == -[uBsEIO] || "${1:-}" == -OO ]]; do shift; done    # the interpreter's own switches (`python3 -u -m ...`)
    case "$1 $2" in
        "-m sglang.launch_server") shift 2; _cbg_launch sglang "$@" ;;
        "-m sglang_router.launch_router") shift 2; _cbg_launch sglang-router "$@" ;;
        "-m dynamo."*) _cbg_launch "dynamo" "$@" ;;
        "-m atom.entrypoints.openai_server") shift 2; _cbg_launch atom "$@" ;;
        "-m pip") _cbg_pip python3 "$@" ;;
        "-c "*snapshot_download*) printf '%s\n' "$3" ;;           # the Hugging Face id as the local path
        *) _cbg_python "$@" ;;
    esac
}
python() { python3 "$@"; }
vllm() { if [[ "$1" == serve ]]; then shift; _cbg_launch vllm "$@"; else _cbg_deny "vllm $1"; fi; }
sglang() { if [[ "$1" == serve ]]; then shift; _cbg_launch sglang "$@"; else _cbg_deny "sglang $1"; fi; }
sglang_router() { _cbg_launch sglang-router "$@"; }
# the vLLM router the DP-attention arms start in front of the worker, after it is ready: a launch
# (recorded although it follows the worker's), so the point is never published without it
vllm-router() { _cbg_launch vllm-router "$@"; }
trtllm-serve() { if [[ "$1" == serve ]]; then shift; fi; _cbg_launch trtllm "$@"; }
# mpirun's own options up to the program it starts (InferenceX runs `mpirun -n 1 ... trtllm-serve`).
mpirun() {
    local CBG_MPIRUN=(mpirun)
    while (( $# )) && [[ "$1" == -* || "$1" =~ ^[0-9]+$ ]]; do CBG_MPIRUN+=("$1"); shift; done
    (( $# )) || { _cbg_deny "mpirun"; return; }
    "$@"
}
# Wrappers that start the command they are given: the command is what they launch.
nohup() { "$@"; }
setsid() { while [[ "${1:-}" == -* ]]; do shift; done; "$@"; }
sleep() { :; }         # waiting changes nothing the script launches
# Package installs into the image before the launch: setup steps the cookbook lists (after a
# recorded launch, the run has ended at the first refused command anyway).
_cbg_pip() {   # the command's words (pip, pip3, python3 -m pip), then its arguments
    local words=("$@")
    while (( $# )) && [[ "$1" != install && "$1" != -* ]] || [[ "$1" == -m ]]; do shift; done
    if [[ "${1:-}" == install ]]; then _cbg_setup "${words[@]}"; else _cbg_deny "${words[*]:0:3}"; fi
}
pip() { _cbg_pip pip "$@"; }
pip3() { _cbg_pip pip3 "$@"; }
timeout() {
    while [[ "${1:-}" == -* ]]; do [[ "$1" == -[sk] ]] && shift; shift; done
    shift                                        # the duration
    "$@"
}
numactl() { while [[ "${1:-}" == -* ]]; do shift; done; "$@"; }
# `exec CMD` of a stub (a launch: a function, which the builtin cannot exec) runs it and ends the
# script; anything else (`exec -a NAME prog`, redirections) is the builtin's.
exec() {
    local words=("$@")
    while [[ "${1:-}" == -* ]]; do [[ "$1" == -a ]] && shift; shift; done
    if (( $# )) && declare -F "$1" >/dev/null; then
        "$@"
        exit $?
    fi
    builtin exec "${words[@]}"
}
env() {
    if [[ $# -eq 0 || "$1" == -* ]]; then command env "$@"; return; fi
    (
        while [[ "${1:-}" == [A-Za-z_]*=* ]]; do export "$1"; shift; done
        if (( $# )); then "$@"; else command env; fi
    )
}
hf() { [[ "$1" == download ]] || _cbg_deny "hf $1"; }
huggingface-cli() { [[ "$1" == download ]] || _cbg_deny "huggingface-cli $1"; }
nvidia-smi() { :; }
# GPU inventory, as nvidia-smi; the two probes scripts read (`rocm-smi ... | grep | awk`) answer as
# the node the run needs: its GPUs idle (VRAM 0 %, what the scripts wait for); the MEC firmware
# version, which cookbookgen cannot know, is 0: the scripts' test `-lt 177` takes the older-firmware
# branch (the workaround HSA_NO_SCRATCH_RECLAIM=1, harmless on newer firmware), as when it is empty.
rocm-smi() {
    local gpu
    for gpu in 0 1 2 3 4 5 6 7; do
        case " $* " in
            *" --showmemuse "*) printf 'GPU[%s]\t\t: GPU Memory Allocated (VRAM%%): 0\n' "$gpu" ;;
            *" --showfw "*) printf 'GPU[%s]\t\t: MEC firmware version: \t\t0\n' "$gpu" ;;
        esac
    done
}
amd-smi() { :; }
# Probes of the container or the machine the runner's job runs on: no value of them is true on the
# reader's machine, and the real programs are absent from the sandbox. Each answers with the
# placeholder the published command shows (rules/render.yaml `placeholders`); any other use of
# these programs is refused.
# - `find ... -name ptxas`: where the image's ptxas is (the dsv4 SGLang scripts set TRITON_PTXAS_PATH
#   from the first match under /usr/local/cuda* and the pip nvidia packages): $PTXAS_PATH;
find() {
    local word previous=
    for word; do
        if [[ "$previous" == -name && "$word" == ptxas ]]; then printf '%s\n' '$PTXAS_PATH'; return 0; fi
        previous="$word"
    done
    _cbg_deny find
}
# - `hostname` (`-s`, `-f`): this node's host name, $HOSTNAME (bash sets it on the reader's node; the
#   sandbox's own host name is that placeholder too, so `uname -n` and bash's $HOSTNAME give it);
#   `hostname -i` / `-I`: this node's address, $NODE_IP;
HOSTNAME='$HOSTNAME'
hostname() {
    case "$*" in
        "" | -s | -f | --short | --fqdn | --long) printf '%s\n' '$HOSTNAME' ;;
        -i | -I | --ip-address | --all-ip-addresses) printf '%s\n' '$NODE_IP' ;;
        *) _cbg_deny "hostname $*" ;;
    esac
}
# - `df --output=avail [-BG|-h|...] PATH` (free space, such as /dev/shm's before sizing a host-memory
#   cache: the scripts check their size against it and skip the check when df gives no number): the
#   header and $FREE_SPACE, the free space on the reader's node.
df() {
    local word output=
    for word; do
        case "$word" in
            --output=avail) output=1 ;;
            -B?* | -h | -H | -k | -m | -P | --si | --block-size=* | --) ;;
            -*) _cbg_deny "df $*"; return ;;
        esac
    done
    if [[ -z "$output" ]]; then _cbg_deny "df $*"; return; fi
    printf '%s\n' Avail '$FREE_SPACE'
}

# Services of the deployment the scripts start beside the engine, in the background before its launch
# (`mooncake_master ... &`, `lmcache server ... &`): not rendered from a script yet, so the point stops
# at their line with a message saying what they are (recipes/script.py SERVICES), never published
# without them.
mooncake_master() { _cbg_deny mooncake_master; }
lmcache() { _cbg_deny "lmcache ${1:-}"; }

# --- benchmark_lib.sh, as stubs (same names and checks, no side effects) -------------------------
export PORT="${PORT:-8888}"

# The checks benchmark_lib.sh makes of the row: the same rows pass, the same rows stop the script
# (exit 1), each with cookbookgen's own message.
_cbg_row_error() { echo "benchmark_lib.sh check: $*" >&2; exit 1; }
check_env_vars() {
    local name missing=()
    for name in "$@"; do
        [[ -n "${!name:-}" ]] || missing+=("$name")
    done
    (( ${#missing[@]} == 0 )) || _cbg_row_error "unset: ${missing[*]}"
}
agentic_kv_offload_enabled() {
    [[ -n "${KV_OFFLOADING:-}" ]] || _cbg_row_error "KV_OFFLOADING is unset (an agentic row sets it)"
    [[ "$KV_OFFLOADING" != none ]]
}
require_agentic_kv_offload_none() {
    ! agentic_kv_offload_enabled || _cbg_row_error "the script runs KV_OFFLOADING=none only; the row has $KV_OFFLOADING"
    [[ -z "${KV_OFFLOAD_BACKEND:-}" ]] || _cbg_row_error "KV_OFFLOAD_BACKEND=$KV_OFFLOAD_BACKEND on a row without KV offloading"
}
require_agentic_kv_offload_backend() {     # true: offload with backend $1; false: no offloading
    case "${KV_OFFLOADING:-}" in
        "") _cbg_row_error "KV_OFFLOADING is unset (an agentic row sets it)" ;;
        none) require_agentic_kv_offload_none; return 1 ;;
        dram)
            [[ "${KV_OFFLOAD_BACKEND:-}" == "$1" ]] || _cbg_row_error "the script offloads with $1; the row names '${KV_OFFLOAD_BACKEND:-}'"
            [[ "${TOTAL_CPU_DRAM_GB:-}" =~ ^[1-9][0-9]*$ ]] || _cbg_row_error "DRAM offloading needs TOTAL_CPU_DRAM_GB > 0" ;;
        *) _cbg_row_error "KV_OFFLOADING=$KV_OFFLOADING (benchmark_lib.sh knows none and dram)" ;;
    esac
}
select_available_server_port() { export PORT=8888; }
build_replay_cmd() { REPLAY_CMD=":"; }
resolve_trace_source() { :; }
install_agentic_deps() { :; }
# benchmark_lib.sh's `python3 -m pip install` into the image: a setup step the cookbook lists
agentic_pip_install() { _cbg_setup pip install "$@"; }
wait_for_server_ready() { :; }
wait_for_ready() { :; }
write_command() { :; }
append_command() { :; }
run_benchmark_serving() { :; }
run_agentic_replay_and_write_outputs() { :; }
run_eval() { :; }
start_gpu_monitor() { :; }
stop_gpu_monitor() { :; }
stop_background_process_tree() { :; }
wait_for_amd_gpu_clean() { :; }

# --- programs of the image the scripts use around their launch ----------------------------------
# python3 other than an engine launch: `python3 <script folder>/*.py` (a kernel-config install) is a
# setup step; `python3 -m venv` makes the benchmark client's environment (AIPerf: the server is
# launched with the image's interpreter, named before it) and changes nothing launched; `python3 -c`
# of import statements only checks that the image and the packages the script installed import,
# which they do on the runner; anything else is refused.
_cbg_python() {
    if [[ "$1" == *.py && "$(dirname "$1")" == "$(dirname "$0")" ]]; then
        _cbg_where
        printf '%s\0' SETUP "$CBG_WHERE" "$#" "$@" >> "$CBG_CAPTURE.$BASHPID"
    elif [[ "$1 $2" == "-m venv" ]]; then
        :
    elif [[ "$1" == -c ]] && _cbg_imports_only "$2"; then
        :
    else
        _cbg_deny "python3 $1"
    fi
}
# Python code that is import statements only (`import a.b[ as c][, d]`, `from a.b import c[, d]`),
# one to a line or separated by `;`.
_cbg_imports_only() {
    local code="${1//;/$'\n'}" statement name='[A-Za-z_][A-Za-z0-9_]*' dotted any=
    dotted="$name(\.$name)*"
    while IFS= read -r statement; do
        statement="${statement#"${statement%%[![:space:]]*}"}"
        statement="${statement%"${statement##*[![:space:]]}"}"
        [[ -z "$statement" ]] && continue
        [[ "$statement" =~ ^import\ +$dotted(\ +as\ +$name)?(\ *,\ *$dotted(\ +as\ +$name)?)*$ ||
           "$statement" =~ ^from\ +$dotted\ +import\ +$name(\ +as\ +$name)?(\ *,\ *$name(\ +as\ +$name)?)*$ ]] || return 1
        any=1
    done <<< "$code"
    [[ -n "$any" ]]
}

# Image patches before the launch, setup steps the cookbook lists: `bash <script folder>/*.sh` of a
# script that launches no engine itself (a patch script of the checkout, as `python3 <script
# folder>/*.py`; a benchmark script handing over to its sibling runs) and `sed -i` of a file outside
# the sandbox's folder (a file of the image: the engine's sources). Any other sed or bash runs.
bash() {
    if [[ "${1:-}" == *.sh && "$(dirname "$1")" == "$(dirname "$0")" && -f "$1" ]] &&
       ! command grep -qE 'sglang[._]launch_|sglang serve|vllm serve|trtllm-serve|-m (dynamo|atom)\.' "$1"; then
        _cbg_setup bash "$@"
    else
        command bash "$@"
    fi
}
sed() {
    local words=("$@") script= inplace= outside=
    while (( $# )); do
        case "$1" in
            -e | -f | --expression | --file) script=1; shift ;;
            -e* | -f* | --expression=* | --file=*) script=1 ;;
            -i* | --in-place*) inplace=1 ;;
            -l | --line-length) shift ;;
            --) shift; break ;;
            -?*) [[ "$1" == -[!-]*i* ]] && inplace=1 ;;
            *) if [[ -z "$script" ]]; then script=1; elif [[ "$1" == /* && "$1" != "$HOME"/* ]]; then outside=1; fi ;;
        esac
        shift
    done
    for script; do [[ "$script" == /* && "$script" != "$HOME"/* ]] && outside=1; done
    if [[ -n "$inplace" && -n "$outside" ]]; then
        _cbg_setup sed "${words[@]}"
    else
        command sed "${words[@]}"
    fi
}
