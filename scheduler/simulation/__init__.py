"""Scheduling without a cluster: ``simulate`` and ``explain``, on the embedded API server.

Tools for trying configs and plugins: the daemon itself runs against an
emulated API server loaded from a cluster file, so what is simulated is what
``run`` would do. Nothing here is imported by the daemon.
"""
