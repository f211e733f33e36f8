"""Fidelity: our plugins against the real kube-scheduler, scenario by scenario."""
