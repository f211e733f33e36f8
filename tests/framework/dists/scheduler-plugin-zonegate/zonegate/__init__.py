"""Test distribution: a real plugin installed through its entry point."""
