"""Reaching a node's BMC from what Greenlight stores about it, through the process's session pool."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.conf import settings

from . import RedfishClient
from .pool import SessionPool, pool_key

if TYPE_CHECKING:
    from fleet.models import Node

_pool: SessionPool | None = None


def session_pool() -> SessionPool:
    """This process's pool of open BMC sessions (created on first use)."""
    global _pool
    if _pool is None:
        _pool = SessionPool(idle_s=settings.GREENLIGHT_BMC_SESSION_IDLE_S)
    return _pool


def client_for(node: Node) -> RedfishClient:
    """A new client for the node's BMC, pinned to the certificate recorded at enrollment."""
    return RedfishClient(
        node.bmc_address,
        node.bmc_username,
        node.bmc_password,
        fingerprint=node.bmc_cert_fingerprint or None,
        allow_plain_http=node.bmc_allows_plain_http(),
    )


@contextmanager
def bmc_session(node: Node) -> Iterator[RedfishClient]:
    """An open client for the node's BMC for the length of the block, reused across steps."""
    # A plain-HTTP BMC is never pooled: each step builds its client afresh, so a withdrawn
    # plain-HTTP mark takes effect at the next step, not when an idle session expires.
    if settings.GREENLIGHT_BMC_SESSION_IDLE_S <= 0 or node.bmc_is_plain_http():
        with client_for(node) as client:
            yield client
        return
    key = pool_key(
        node.bmc_address, node.bmc_username, node.bmc_password, node.bmc_cert_fingerprint
    )
    with session_pool().lend(key, lambda: client_for(node)) as client:
        yield client
