"""Allows ``python -m scheduler`` as an alias of the ``pluggable-scheduler`` command."""

from scheduler.cli.main import main

raise SystemExit(main())
