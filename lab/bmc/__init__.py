"""Simulated Redfish BMCs: one aiohttp application per lab node, in a vendor's flavour."""
