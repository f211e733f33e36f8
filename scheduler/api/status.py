"""The outcome of a plugin call, with kube-scheduler's seven codes.

The codes keep kube-scheduler's meanings so that a plugin author's intuition
(and kube-scheduler's documentation) carries over unchanged:

- ``SUCCESS``: the plugin is fine with the pod (on this node).
- ``ERROR``: something went wrong that is not the pod's fault; the attempt is
  aborted and the pod is retried with backoff.
- ``UNSCHEDULABLE``: the pod does not fit now, but preemption (PostFilter) or
  a cluster change may help.
- ``UNSCHEDULABLE_AND_UNRESOLVABLE``: the node can never take the pod, and
  preemption on that node would not help.
- ``WAIT``: from Permit only: hold the pod until allowed, rejected or timed out.
- ``SKIP``: the plugin has nothing to do for this pod (PreFilter, PreScore,
  Bind); the framework then skips its related hooks.
- ``PENDING``: the pod waits for something outside the scheduler (for example
  a resource claim); it is requeued on cluster events, not preempted for.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    """kube-scheduler's status codes, with its meanings (see the module's description).

    Examples:
        >>> Code.UNSCHEDULABLE_AND_UNRESOLVABLE.title
        'UnschedulableAndUnresolvable'
    """

    #: The plugin is fine with the pod (on this node).
    SUCCESS = 0
    #: Not the pod's fault: the attempt is aborted, the pod retried with backoff.
    ERROR = 1
    #: Does not fit now; preemption or a cluster change may help.
    UNSCHEDULABLE = 2
    #: Can never fit on that node; preemption there would not help.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    #: From Permit only: hold the pod until allowed, rejected or timed out.
    WAIT = 4
    #: Nothing to do for this pod: the plugin's related hooks are skipped.
    SKIP = 5
    #: Waits for something outside the scheduler; requeued on events, not preempted for.
    PENDING = 6

    @property
    def title(self) -> str:
        """kube-scheduler's spelling of the code, used in logs and messages."""
        return _TITLES[self]


_TITLES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

REJECTION_CODES = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


@dataclass(frozen=True, slots=True)
class Status:
    """What a hook returns when it has something to say beyond per-node arrays.

    ``plugin`` is filled in by the framework with the name of the plugin that
    produced the status, so messages and metrics can name it. Build one with
    the class methods, which keep kube-scheduler's codes.

    Examples:
        >>> status = Status.unschedulable("node(s) are not in the pod's zone")
        >>> status.is_rejected(), status.code.title
        (True, 'Unschedulable')
        >>> str(status.with_plugin("ZoneGate"))
        "ZoneGate: Unschedulable: node(s) are not in the pod's zone"
        >>> Status.wait(30, "waiting for the gang").timeout
        30.0
        >>> Status.error_status(ValueError("bad args")).message()
        'bad args'
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str | None = None
    error: BaseException | None = field(default=None, compare=False)
    timeout: float | None = None

    @classmethod
    def success(cls) -> Status:
        """The (shared) success status; returning None from a hook means the same."""
        return _SUCCESS

    @classmethod
    def error_status(cls, error: BaseException | str) -> Status:
        """An Error: not the pod's fault; the pod is retried after a backoff."""
        if isinstance(error, BaseException):
            text = str(error) or type(error).__name__
            return cls(Code.ERROR, (text,), error=error)
        return cls(Code.ERROR, (error,))

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        """Unschedulable: a cluster change or preemption may help."""
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        """``UnschedulableAndUnresolvable``: preemption cannot help."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @classmethod
    def wait(cls, timeout: float, *reasons: str) -> Status:
        """From Permit: hold the pod for at most ``timeout`` seconds."""
        return cls(Code.WAIT, reasons, timeout=float(timeout))

    @classmethod
    def skip(cls) -> Status:
        """Skip: nothing to do for this pod; the framework skips this plugin's related hooks."""
        return _SKIP

    @classmethod
    def pending(cls, *reasons: str) -> Status:
        """Pending: the pod waits for something outside the scheduler; not preempted for."""
        return cls(Code.PENDING, reasons)

    def is_success(self) -> bool:
        """Whether the code is Success."""
        return self.code is Code.SUCCESS

    def is_skip(self) -> bool:
        """Whether the code is Skip."""
        return self.code is Code.SKIP

    def is_wait(self) -> bool:
        """Whether the code is Wait."""
        return self.code is Code.WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod, not the system."""
        return self.code in REJECTION_CODES

    def message(self) -> str:
        """The reasons joined with ``, ``, as kube-scheduler prints them."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        """This status attributed to ``plugin`` (the framework does this for every hook)."""
        if self.plugin == plugin:
            return self
        return Status(self.code, self.reasons, plugin, self.error, self.timeout)

    def __str__(self) -> str:
        text = self.code.title
        if self.reasons:
            text += f": {self.message()}"
        if self.plugin:
            text = f"{self.plugin}: {text}"
        return text


_SUCCESS = Status()
_SKIP = Status(Code.SKIP)
