"""The fleet app's REST API: sites, racks, SKUs, nodes with components, manifests, events."""
