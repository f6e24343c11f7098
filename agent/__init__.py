"""The Greenlight agent: runs in a node's ephemeral (PXE) environment or installed OS.

Kept small on purpose (standard library and httpx) so it fits a ramdisk. It opens every
connection itself: it checks in with the boot credential its boot medium carried, pulls its
commands by polling, runs the real tools through a hardware layer (the lab swaps in a
simulation), and pushes results and logs back. Nothing on the node listens.
"""

AGENT_VERSION = "1.0.0"
