"""HTTP scheduler extenders (kube-scheduler's ``extenders:``) as a built-in plugin."""
