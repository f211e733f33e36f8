"""The framework: finds plugins, builds profiles from config and runs extension points."""
