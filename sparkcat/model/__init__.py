"""The cluster state every layer shares: config snapshot, target states, restart requests, statuses."""
