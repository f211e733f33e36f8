"""AnnotationGate: a pluggable-scheduler plugin refusing pods with a configured annotation."""

from scheduler_plugin_annotation_gate.plugin import AnnotationGate, AnnotationGateArgs

__all__ = ["AnnotationGate", "AnnotationGateArgs"]
