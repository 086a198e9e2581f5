# Sourced (through BASH_ENV) before an InferenceX single-node benchmark script runs in the sandbox
# of cookbookgen.recipes.script. It stands in for everything the script would reach outside itself:
# - `source .../benchmark_lib.sh` reads the stubs below instead of InferenceX's library;
# - engine launches are recorded in "$CBG_CAPTURE.<process id>" (one file per process, as launches
#   may run in background subshells; NUL-separated: LAUNCH, kind, line, argc, argv..., the exported
#   environment as `env -0` prints it, END) and never executed;
# - the setup steps the scripts run before serving are no-ops: `hf download` (weights), `nvidia-smi`
#   (GPU inventory), `python3 <script folder>/*.py` (kernel-config installs, recorded as SETUP);
# - any other command that is not a builtin or a command of the sandbox's PATH is recorded in
#   "$CBG_DENIED" (line and name) and ends the script.
# Ports are fixed: PORT is InferenceX's default 8888 (benchmark-tmpl.yml), never probed.
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
_cbg_failed() { printf '%s %s\n' "$?" "${CBG_LINE:-0}" >> "$CBG_FAILED"; }
_cbg_exit() {
    local rc=$?
    wait
    printf '%s %s\n' "$rc" "${CBG_LINE:-0}" > "$CBG_STATUS"
}

command_not_found_handle() {
    printf '%s %s\n' "${BASH_LINENO[0]}" "$1" >> "$CBG_DENIED"
    kill -KILL "$$"
    return 127
}

source() {
    case "$1" in
        */benchmark_lib.sh) return 0 ;;       # the stubs below are already defined
        *) builtin source "$@" ;;
    esac
}

_cbg_launch() {   # kind, then the launch's argv (without the program that starts it)
    local kind="$1"
    shift
    { printf '%s\0' LAUNCH "$kind" "${BASH_LINENO[1]}" "$#" "$@"; env -0; printf 'END\0'; } >> "$CBG_CAPTURE.$BASHPID"
}

_cbg_deny() {
    printf '%s %s\n' "${BASH_LINENO[1]}" "$*" >> "$CBG_DENIED"
    kill -KILL "$$"
}

python3() {
    case "$1 $2" in
        "-m sglang.launch_server") shift 2; _cbg_launch sglang "$@" ;;
        "-m sglang_router.launch_router") shift 2; _cbg_launch sglang-router "$@" ;;
        "-m dynamo."*) _cbg_launch "dynamo" "$@" ;;
        "-c "*snapshot_download*) printf '%s\n' "$3" ;;           # the Hugging Face id as the local path
        *)
            if [[ "$1" == *.py && "$(dirname "$1")" == "$(dirname "$0")" ]]; then
                printf '%s\0' SETUP "${BASH_LINENO[0]}" "$#" "$@" >> "$CBG_CAPTURE.$BASHPID"
            else
                _cbg_deny "python3 $1"
            fi ;;
    esac
}
python() { python3 "$@"; }
vllm() { if [[ "$1" == serve ]]; then shift; _cbg_launch vllm "$@"; else _cbg_deny "vllm $1"; fi; }
sglang_router() { _cbg_launch sglang-router "$@"; }
hf() { [[ "$1" == download ]] || _cbg_deny "hf $1"; }
huggingface-cli() { [[ "$1" == download ]] || _cbg_deny "huggingface-cli $1"; }
nvidia-smi() { :; }

# --- benchmark_lib.sh, as stubs (same names and checks, no side effects) -------------------------
export PORT="${PORT:-8888}"

check_env_vars() {
    local name missing=()
    for name in "$@"; do
        [[ -n "${!name:-}" ]] || missing+=("$name")
    done
    if (( ${#missing[@]} )); then
        echo "Error: The following required environment variables are not set: ${missing[*]}" >&2
        exit 1
    fi
}

agentic_kv_offload_enabled() { [[ "${KV_OFFLOADING:-none}" != none ]]; }
require_agentic_kv_offload_none() {
    if agentic_kv_offload_enabled; then
        echo "Error: expected KV_OFFLOADING=none, got '$KV_OFFLOADING'" >&2
        exit 1
    fi
}
require_agentic_kv_offload_backend() { agentic_kv_offload_enabled; }
select_available_server_port() { export PORT=8888; }
build_replay_cmd() { REPLAY_CMD=":"; }
resolve_trace_source() { :; }
install_agentic_deps() { :; }
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
