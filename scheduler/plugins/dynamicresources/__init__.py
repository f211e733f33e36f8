"""Dynamic Resource Allocation: kube's structured allocator and the DynamicResources plugin."""
