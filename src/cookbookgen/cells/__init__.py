"""Cells and provenance: points grouped by topology, tagged with PR, commit, run and status.

The names a reader picks a cell's commands by (plain constants: `show --router/--kv` lists them
without loading the cells stack)."""

TIERS = ("none", "hicache", "mooncake")   # the explorer's KV tiers
ROUTERS = ("dynamo", "sglang")           # the routers a cell is shown under: Dynamo frontend, SGLang router
