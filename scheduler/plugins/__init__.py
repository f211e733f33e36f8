"""The in-tree plugins: kube-scheduler's default plugins, on the vectorized plugin API."""
