#!/usr/bin/env bash
# Hostile: opens a socket with bash itself (no command to refuse).
source "$(dirname "$0")/../../benchmark_lib.sh"
exec 3<>/dev/tcp/1.1.1.1/80
python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP"
