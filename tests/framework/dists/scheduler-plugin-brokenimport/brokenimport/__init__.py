"""Test distribution whose import fails, as a plugin with a missing dependency would."""

import a_module_that_does_not_exist  # noqa: F401
