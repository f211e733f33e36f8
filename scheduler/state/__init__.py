"""Cluster state as column-oriented tables that scheduling-cycle hooks read."""
