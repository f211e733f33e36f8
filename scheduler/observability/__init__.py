"""What the daemon tells its operators: Prometheus metrics, structured logs, health endpoints.

The package imports nothing itself, so a caller that needs one part does not
pay for the others (the framework runner needs a metrics recorder, not
aiohttp; the CLI needs logging, not prometheus-client). Import the modules:

- :mod:`scheduler.observability.metrics`: ``SchedulerMetrics``, with
  kube-scheduler's metric names, labels and buckets, and ``ProfileRecorder``,
  the framework runner's per-plugin recorder.
- :mod:`scheduler.observability.logging`: ``configure_logging`` and the
  helpers that bind pod, node, plugin and profile to a logger.
- :mod:`scheduler.observability.server`: ``HealthServer``, serving
  ``/healthz``, ``/livez``, ``/readyz`` and ``/metrics``.
"""
