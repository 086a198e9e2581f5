#!/usr/bin/env bash
# Hostile: never finishes.
source "$(dirname "$0")/../../benchmark_lib.sh"
while true; do
    :
done
