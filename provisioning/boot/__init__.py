"""The boot plane: what a node boots and what earns its agent a session.

Boot credentials (armed per ordered boot, redeemed once), the per-node ISO and the boot images it
is built from, the boot path a manifest chooses (virtual media, UEFI HTTP, iPXE) and the views
booting nodes fetch from. Below the agent channel and the run core.
"""
