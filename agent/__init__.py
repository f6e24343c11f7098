"""The Greenlight agent: runs in a node's ephemeral (PXE) environment or installed OS.

Kept small on purpose (standard library and httpx) so it fits a ramdisk. It checks in with
Greenlight, serves commands over HTTP, runs the real tools through a hardware layer (the lab
swaps in a simulation), and pushes results and logs back.
"""

AGENT_VERSION = "1.0.0"
