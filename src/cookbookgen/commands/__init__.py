"""CLI subcommands beyond `render`: each module has `register(subparsers)` and may print.

Only `cli.py` imports these; nothing else imports the CLI layer.
"""
