"""Use the fake CEL module while ``scheduler.model.devicecel`` does not exist yet."""

from __future__ import annotations

import sys

try:
    import scheduler.model.devicecel  # noqa: F401
except ImportError:
    from tests.plugins.dynamicresources import fakecel

    sys.modules["scheduler.model.devicecel"] = fakecel
