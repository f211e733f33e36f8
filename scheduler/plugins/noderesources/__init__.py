"""Resource plugins: NodeResourcesFit and NodeResourcesBalancedAllocation."""

from scheduler.plugins.noderesources.balanced import NodeResourcesBalancedAllocation
from scheduler.plugins.noderesources.fit import NodeResourcesFit

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesFit"]
