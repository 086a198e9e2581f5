#!/usr/bin/env bash
# Fails on its own check, as the InferenceX scripts do on a bad input.
set -eo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
if [[ "$TP" != 8 ]]; then
    echo "Error: TP must be 8, got $TP" >&2
    exit 1
fi
python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP"
