#!/usr/bin/env bash
# Hostile: does not parse.
source "$(dirname "$0")/../../benchmark_lib.sh"
if [[ "$TP" == 1 ]]; then
    echo one
fi fi
python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP"
