"""Greenlight's boot images: the ephemeral environment and the VM tier's installed OS.

Production tooling: it builds what a site boots its nodes into (kernel, initramfs, hybrid ISO
with the agent and its tools). It imports nothing of Greenlight's Django apps, nor the lab.
"""

MARKER = "@GREENLIGHT_ARGS@"
