"""Command-line interface: one module per sub-command, wired together in :mod:`main`."""
