#!/usr/bin/env bash
# Hostile: computes flags but starts no engine.
source "$(dirname "$0")/../../benchmark_lib.sh"
MAX_RUNNING_REQUESTS=$((2 * CONC))
echo "would run with --max-running-requests $MAX_RUNNING_REQUESTS"
