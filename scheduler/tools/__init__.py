"""Tooling around the scheduler, never loaded by the daemon.

- :mod:`.bench`: benchmarks (``pluggable-scheduler bench``), side by side with kube-scheduler;
- :mod:`.controlplane`: builds a real kube-apiserver, etcd, kube-scheduler and
  kube-controller-manager from pinned Go modules and runs them (tests, benchmarks);
- :mod:`.packageindex`: a PyPI-compatible index on loopback, filled as a release is;
- :mod:`.scaffold`: ``pluggable-scheduler new-plugin``, a plugin distribution to start from.
"""
