"""Binding a pod to a node, and what came of it: the one place that knows.

kube-scheduler's DefaultBinder creates the pod's ``pods/binding``
subresource; the API server's answer says more than success or failure, and
the engine acts on it (see :class:`BindResult`). DefaultBinder, and any Bind
plugin that wants kube's behaviour, calls :func:`bind_pod`; the engine reads
the outcome of whichever Bind plugin ran with :meth:`BindOutcome.from_status`.
Both classify the API's answer with the same rule, here.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from scheduler.api.handle import ApiClient
from scheduler.api.status import Code, Status
from scheduler.api.views import Pod

__all__ = ["BindOutcome", "BindResult", "bind_pod", "binding_body"]

# The API server's answers (pkg/registry/core/pod/storage: assignPod and
# setPodNodeAndMetadata), matched in any error text a Bind plugin reports.
_ALREADY_ASSIGNED = re.compile(r'already assigned to node "([^"]*)"')
_BEING_DELETED = "is being deleted, cannot be assigned to a host"


class BindResult(enum.Enum):
    """What a binding attempt left behind, as the engine must treat it."""

    #: The pod is on the chosen node: bound now, or by an earlier attempt of
    #: ours whose answer was lost (409 'already assigned to node "<ours>"').
    BOUND = "bound"
    #: 409 'already assigned to node "<other>"': another scheduler or client
    #: placed the pod meanwhile. Retrying would only repeat the 409.
    ASSIGNED_ELSEWHERE = "assigned-elsewhere"
    #: 404, or 409 'is being deleted': the pod cannot be placed at all.
    POD_GONE = "pod-gone"
    #: Anything else (5xx, a timeout, ...): the pod is retried after a backoff.
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BindOutcome:
    """The typed outcome of binding ``pod`` to ``node_name``."""

    result: BindResult
    node_name: str
    #: The API's (or the plugin's) message; empty for a plain success.
    message: str = ""
    #: The node the API server says the pod is on (a 409 'already assigned').
    assigned_to: str | None = None
    #: What the client raised, if anything (its type names the metric reason).
    error: BaseException | None = None

    @property
    def bound(self) -> bool:
        """Whether the pod is on the chosen node (now or by an earlier attempt)."""
        return self.result is BindResult.BOUND

    @property
    def by_earlier_attempt(self) -> bool:
        """Bound, but the API said so with a 409: an earlier attempt had committed."""
        return self.bound and self.assigned_to is not None

    @classmethod
    def from_answer(
        cls,
        node_name: str,
        http_status: int | None,
        message: str,
        error: BaseException | None = None,
    ) -> BindOutcome:
        """Classify a failed binding from the HTTP status (None: unknown) and message.

        Examples:
            >>> BindOutcome.from_answer("a", 409, 'pod p is already assigned to node "a"').result
            <BindResult.BOUND: 'bound'>
            >>> BindOutcome.from_answer("a", 409, 'pod p is already assigned to node "b"').result
            <BindResult.ASSIGNED_ELSEWHERE: 'assigned-elsewhere'>
            >>> BindOutcome.from_answer("a", 404, "pods \\"p\\" not found").result
            <BindResult.POD_GONE: 'pod-gone'>
        """
        if http_status == 404:
            return cls(BindResult.POD_GONE, node_name, message, error=error)
        if http_status in (409, None):
            match = _ALREADY_ASSIGNED.search(message)
            if match is not None:
                on = match.group(1)
                result = BindResult.BOUND if on == node_name else BindResult.ASSIGNED_ELSEWHERE
                return cls(result, node_name, message, on, error)
            if _BEING_DELETED in message:
                return cls(BindResult.POD_GONE, node_name, message, error=error)
        return cls(BindResult.FAILED, node_name, message, error=error)

    @classmethod
    def from_error(cls, node_name: str, error: BaseException) -> BindOutcome:
        """Classify what the handle's client raised.

        The client's errors carry the HTTP ``status`` and the API's
        ``message`` as attributes (the daemon's ``ApiError`` does); any other
        exception is judged by its text.
        """
        http_status = getattr(error, "status", None)
        message = getattr(error, "message", None)
        return cls.from_answer(
            node_name,
            http_status if isinstance(http_status, int) else None,
            message if isinstance(message, str) else str(error),
            error,
        )

    @classmethod
    def from_status(cls, status: Status, node_name: str) -> BindOutcome:
        """The outcome a Bind point's status stands for (any Bind plugin's).

        An error the plugin kept (``status.error``) is classified as the
        client's error; a plugin that reports only a message is understood
        from its text.
        """
        if status.is_success():
            return cls(BindResult.BOUND, node_name)
        if status.error is not None:
            return cls.from_error(node_name, status.error)
        return cls.from_answer(node_name, None, status.message(), None)

    def status(self, pod: Pod) -> Status:
        """What a Bind plugin returns for this outcome.

        Not bound is an Error naming the pod (the client's error alone often
        does not); the framework adds kube's 'running Bind plugin' prefix.
        """
        if self.bound:
            return Status.success()
        detail = str(self.error) if self.error is not None else self.message
        if not detail and self.error is not None:
            detail = type(self.error).__name__
        message = f"binding pod {pod.key} to node {self.node_name}: {detail}"
        return Status(Code.ERROR, (message,), error=self.error)


def binding_body(pod: Pod, node_name: str) -> dict[str, Any]:
    """The ``v1.Binding`` kube-scheduler posts for ``pod`` onto ``node_name``.

    It carries the pod's UID (when known), so the API server refuses it if
    the pod was deleted and re-created under the same name meanwhile.

    Examples:
        >>> from scheduler.testing import PluginTestKit, make_pod
        >>> pod = PluginTestKit().pod(make_pod("web", namespace="shop"))
        >>> binding_body(pod, "node-a")["metadata"]
        {'name': 'web', 'namespace': 'shop', 'uid': 'uid-shop-web'}
    """
    metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        metadata["uid"] = pod.uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


async def bind_pod(client: ApiClient, pod: Pod, node_name: str) -> BindOutcome:
    """POST ``pod``'s Binding to ``node_name`` and classify the answer.

    The client's own policy applies: a POST is retried on 429 (the server did
    not act on it), not on 5xx, as client-go does for kube-scheduler; the
    engine backs the pod off instead. Never raises for an API answer.
    """
    path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
    try:
        await client.request("POST", path, body=binding_body(pod, node_name))
    except Exception as err:  # any client failure is an outcome, not a crash
        return BindOutcome.from_error(node_name, err)
    return BindOutcome(BindResult.BOUND, node_name)
