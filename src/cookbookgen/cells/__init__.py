"""Cells and provenance: points grouped by topology, tagged with PR, commit, run and status."""
