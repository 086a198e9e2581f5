"""cookbookgen: launch commands for LLM-serving cookbooks, checked against the benchmarked recipes."""

__version__ = "0.1.0"
