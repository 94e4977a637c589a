"""``python -m defsent_cli`` runs the CLI."""

from .cli import run

run()
