"""The REST API: sites, racks, SKUs, nodes, manifests, events, runs, wipes, profiles, gates."""
