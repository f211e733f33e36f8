"""The engine: scheduling queue, cache of cluster state, and the scheduling/binding cycles."""
