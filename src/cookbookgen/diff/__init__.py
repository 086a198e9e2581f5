"""Diff: compare published launch commands with what workers really ran."""
