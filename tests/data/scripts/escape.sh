#!/usr/bin/env bash
# Hostile: writes next to itself, outside its working folder.
source "$(dirname "$0")/../../benchmark_lib.sh"
echo pwned > "$(dirname "$0")/escaped.txt"
python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP"
