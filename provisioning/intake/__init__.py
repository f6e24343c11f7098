"""Intake: enrolling a node from its BMC (probe, SKU match, first inventory) and its admin page."""
