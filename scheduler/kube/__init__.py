"""The kube adapter: the only code that talks to Kubernetes.

Everything above it works on raw JSON dicts. ``client`` wraps
kubernetes-asyncio's configuration/auth/TLS with orjson decoding, priority
rate limiting and retries; ``informer`` mirrors collections by list + watch;
``leaderelection`` holds a Lease; ``events`` records aggregated Events.
"""

from scheduler.kube.apierrors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
)
from scheduler.kube.client import KubeClient, RetryPolicy
from scheduler.kube.eventrecorder import EventRecorder
from scheduler.kube.informer import Informer
from scheduler.kube.leaderelection import LeaderElector
from scheduler.kube.ratelimit import PriorityRateLimiter

__all__ = [
    "AlreadyExists",
    "ApiError",
    "Conflict",
    "EventRecorder",
    "Gone",
    "Informer",
    "KubeClient",
    "LeaderElector",
    "NotFound",
    "PriorityRateLimiter",
    "RetryPolicy",
    "ServerError",
    "TooManyRequests",
    "TransportError",
]
