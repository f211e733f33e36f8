"""The scheduler as a long-running process: ``pluggable-scheduler run``.

It wires the engine (queue, cache, scheduling loop: :mod:`scheduler.engine`)
to the cluster through the kube adapter (:mod:`scheduler.kube`), and keeps
what must outlive any plugin - health, metrics, the lease, signals - on a
control thread (:mod:`.control`). :mod:`.reload` applies an edited config
file while it runs; :mod:`.adapters` are the kube-backed implementations of
the interfaces the engine and plugins use.
"""
