"""A bounded record of every API request, for tests that assert on traffic."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RequestRecord:
    method: str
    path: str
    query: str
    verb: str
    resource: str
    namespace: str
    name: str
    status: int
    duration_ms: float
    user_agent: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class RequestLog:
    def __init__(self, maxlen: int = 100_000) -> None:
        self._records: deque[RequestRecord] = deque(maxlen=maxlen)

    def append(self, record: RequestRecord) -> None:
        self._records.append(record)

    def clear(self) -> None:
        self._records.clear()

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def find(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        status: int | None = None,
    ) -> list[RequestRecord]:
        return [
            r
            for r in self._records
            if (verb is None or r.verb == verb)
            and (resource is None or r.resource == resource)
            and (namespace is None or r.namespace == namespace)
            and (status is None or r.status == status)
        ]
