#!/usr/bin/env bash
# Hostile: floods its output.
source "$(dirname "$0")/../../benchmark_lib.sh"
LINE=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
while true; do
    echo "$LINE$LINE$LINE$LINE$LINE$LINE$LINE$LINE$LINE$LINE"
done
