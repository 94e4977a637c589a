"""One module per group of subcommands; each registers itself on the app."""
