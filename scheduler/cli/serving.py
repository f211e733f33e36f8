"""How ``run`` serves health and metrics: kube-scheduler's secure-serving flags.

kube-scheduler serves ``/healthz`` ``/livez`` ``/readyz`` ``/metrics`` over
HTTPS on ``--secure-port`` (10259), with a self-signed certificate unless
given one, and lets only callers the API server vouches for read anything but
the health paths. ``run`` does the same with the same flags, so a
kube-scheduler manifest's serving flags (kubeadm passes ``--bind-address``,
``--authentication-kubeconfig`` and ``--authorization-kubeconfig``) and the
RBAC that lets Prometheus scrape it carry over.

The address defaults to ``pluggableScheduler.serverAddress``: ``--bind-address``
and ``--secure-port`` override its host and port (``--secure-port 0`` serves
nothing, as in kube). ``--plain-http`` serves that address over plain HTTP
with no authentication, for local use (a laptop, a kind cluster); it refuses
the secure-serving flags rather than ignoring them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scheduler.errors import UserError
from scheduler.observability.servingdefaults import DEFAULT_ALWAYS_ALLOW_PATHS, DEFAULT_CACHE_TTL

if TYPE_CHECKING:
    from scheduler.config.models import SchedulerConfiguration
    from scheduler.observability.server import Serving

__all__ = ["add_serving_options", "address_field", "serving_from_args"]

_SECURE_FLAGS = (
    ("bind_address", "--bind-address"),
    ("secure_port", "--secure-port"),
    ("tls_cert_file", "--tls-cert-file"),
    ("tls_private_key_file", "--tls-private-key-file"),
    ("authentication_kubeconfig", "--authentication-kubeconfig"),
    ("authentication_token_webhook_cache_ttl", "--authentication-token-webhook-cache-ttl"),
    ("authorization_kubeconfig", "--authorization-kubeconfig"),
    ("authorization_always_allow_paths", "--authorization-always-allow-paths"),
    ("authorization_webhook_cache_authorized_ttl", "--authorization-webhook-cache-authorized-ttl"),
    (
        "authorization_webhook_cache_unauthorized_ttl",
        "--authorization-webhook-cache-unauthorized-ttl",
    ),
)


class _PathList(argparse.Action):
    """pflag's string slice: comma-separated, repeatable; the first use replaces the default."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest, None)
        items = [p.strip() for p in str(values or "").split(",") if p.strip()]
        setattr(namespace, self.dest, [*(current or []), *items])


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    """kube-scheduler's serving, authentication and authorization flags, and ``--plain-http``."""
    secure = parser.add_argument_group(
        "secure serving (kube-scheduler's flags)",
        "Health and metrics are served over HTTPS at pluggableScheduler.serverAddress; "
        "/metrics only to callers the API server authenticates (TokenReview) and "
        "authorizes (SubjectAccessReview of get on the path).",
    )
    secure.add_argument(
        "--bind-address",
        metavar="IP",
        help="address to listen on (default: the host of pluggableScheduler.serverAddress)",
    )
    secure.add_argument(
        "--secure-port",
        metavar="PORT",
        type=int,
        help="port to serve HTTPS on (default: the port of pluggableScheduler.serverAddress, "
        "10259); 0 serves nothing",
    )
    secure.add_argument(
        "--tls-cert-file",
        metavar="FILE",
        help="serving certificate (PEM, intermediates after it); default: a self-signed "
        "certificate for localhost and 127.0.0.1 made at start-up",
    )
    secure.add_argument(
        "--tls-private-key-file", metavar="FILE", help="the private key of --tls-cert-file"
    )
    secure.add_argument(
        "--authentication-kubeconfig",
        metavar="FILE",
        help="kubeconfig allowed to create tokenreviews.authentication.k8s.io; default: "
        "in-cluster config, and outside a cluster every request is anonymous",
    )
    secure.add_argument(
        "--authentication-token-webhook-cache-ttl",
        metavar="DURATION",
        help="how long a TokenReview's answer is cached (default: 10s)",
    )
    secure.add_argument(
        "--authorization-kubeconfig",
        metavar="FILE",
        help="kubeconfig allowed to create subjectaccessreviews.authorization.k8s.io; "
        "default: in-cluster config, and outside a cluster every request not skipped by "
        "authorization is forbidden",
    )
    secure.add_argument(
        "--authorization-always-allow-paths",
        metavar="PATHS",
        action=_PathList,
        help="comma-separated paths served without authorization (a trailing * matches a "
        f"prefix; default: {','.join(DEFAULT_ALWAYS_ALLOW_PATHS)}; '' for none)",
    )
    secure.add_argument(
        "--authorization-webhook-cache-authorized-ttl",
        metavar="DURATION",
        help="how long an allowing SubjectAccessReview is cached (default: 10s)",
    )
    secure.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl",
        metavar="DURATION",
        help="how long a denying SubjectAccessReview is cached (default: 10s)",
    )
    parser.add_argument(
        "--plain-http",
        action="store_true",
        help="serve health and metrics at pluggableScheduler.serverAddress over plain HTTP, "
        "to anyone who can connect (local use only)",
    )


def _duration(args: argparse.Namespace, dest: str, flag: str) -> float:
    from scheduler.model.durations import parse_go_duration

    text = getattr(args, dest)
    if text is None:
        return DEFAULT_CACHE_TTL
    try:
        seconds = parse_go_duration(text)
    except ValueError as error:
        raise UserError(f"{flag}: {error}") from None
    if seconds < 0:
        raise UserError(f"{flag}: {text!r} is negative")
    return seconds


def _address(args: argparse.Namespace, config: SchedulerConfiguration) -> str:
    from scheduler.observability.server import override_address

    if args.secure_port is not None and not 0 <= args.secure_port <= 65535:
        raise UserError(f"--secure-port: {args.secure_port} is not a port (0-65535)")
    return override_address(
        config.pluggable_scheduler.server_address, args.bind_address, args.secure_port
    )


def address_field(args: argparse.Namespace) -> str:
    """What to name when the serving address cannot be bound."""
    flags = [
        flag
        for dest, flag in (("bind_address", "--bind-address"), ("secure_port", "--secure-port"))
        if getattr(args, dest, None) is not None
    ]
    return " / ".join(flags) or "pluggableScheduler.serverAddress"


def serving_from_args(args: argparse.Namespace, config: SchedulerConfiguration) -> Serving | None:
    """The serving of ``run``'s flags; None when ``--secure-port 0`` turns it off.

    Everything that can be wrong is found here, before anything starts: a
    flag that makes no sense with ``--plain-http``, a malformed duration or
    path, a certificate that does not load.
    """
    from scheduler.observability.delegated_auth import DelegatedAuthOptions, PathMatcher
    from scheduler.observability.server import Serving
    from scheduler.observability.tls import server_context

    if args.plain_http:
        given = [flag for dest, flag in _SECURE_FLAGS if getattr(args, dest) is not None]
        if given:
            verb = "is" if len(given) == 1 else "are"
            raise UserError(
                f"--plain-http serves without TLS or authentication; {', '.join(given)} "
                f"{verb} for secure serving only: drop {'it' if len(given) == 1 else 'them'} "
                "or --plain-http"
            )
        return Serving(config.pluggable_scheduler.server_address)
    if args.secure_port == 0:
        return None
    paths = args.authorization_always_allow_paths
    always_allow = tuple(DEFAULT_ALWAYS_ALLOW_PATHS if paths is None else paths)
    try:
        PathMatcher(always_allow)
    except ValueError as error:
        raise UserError(f"--authorization-always-allow-paths: {error}") from None
    auth = DelegatedAuthOptions(
        authentication_kubeconfig=args.authentication_kubeconfig or None,
        authorization_kubeconfig=args.authorization_kubeconfig or None,
        token_cache_ttl=_duration(
            args,
            "authentication_token_webhook_cache_ttl",
            "--authentication-token-webhook-cache-ttl",
        ),
        allow_cache_ttl=_duration(
            args,
            "authorization_webhook_cache_authorized_ttl",
            "--authorization-webhook-cache-authorized-ttl",
        ),
        deny_cache_ttl=_duration(
            args,
            "authorization_webhook_cache_unauthorized_ttl",
            "--authorization-webhook-cache-unauthorized-ttl",
        ),
        always_allow_paths=always_allow,
    )
    address = _address(args, config)
    tls = server_context(args.tls_cert_file, args.tls_private_key_file)
    return Serving(address, tls=tls, auth=auth)
