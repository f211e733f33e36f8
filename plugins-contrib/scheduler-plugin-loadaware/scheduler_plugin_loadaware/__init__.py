"""LoadAware: a pluggable-scheduler plugin scoring nodes by their measured utilisation."""

from scheduler_plugin_loadaware.plugin import LoadAware, LoadAwareArgs, target_load_score

__all__ = ["LoadAware", "LoadAwareArgs", "target_load_score"]
