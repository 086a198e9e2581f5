"""Diff: compare published launch commands with the recipes that ran them, and with what workers logged.

A pipeline, each module one stage (a stage imports only earlier ones; no import circle):
0 data       `tables` (the packaged tables), `model` (the values every stage passes on)
1 read       `sources` (the only disk I/O: modules, manifests, cookbook JSON, built sites via `site`)
2 pair       `pairing` (published points to master rows x concurrencies)
3 expect     `expect` (what a point's recipe implies: topology, frontends, request plane)
4 compare    `words`, `aliases`, `explain`, `context`, `structure`, `compare`, `claims`; logs: `logs`, `logcheck`
5 report     `result` (what a run found), `report` (text, JSON, Markdown)
`check` drives the stages config by config.
"""
