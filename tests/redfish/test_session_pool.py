"""The pool of open BMC sessions: reused across steps, dropped when broken, logged out when idle."""

from __future__ import annotations

from urllib.parse import urlsplit

import psutil
import pytest

from common import instrumentation
from provisioning.redfish.errors import BmcUnreachable
from provisioning.redfish.pool import SessionPool, pool_key

from .conftest import lab_client

# Longer than any of these tests takes: nothing goes idle in them unless they say so.
KEPT_S = 600.0


def _key(bmc, password=None):
    return pool_key(
        bmc.https_url, bmc.node.username, password or bmc.node.password, bmc.cert_fingerprint
    )


def test_consecutive_steps_share_one_login(hall):
    bmc = hall.bmc(0)
    pool = SessionPool(idle_s=KEPT_S)
    serials = []
    for _ in range(3):
        with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
            serials.append(client.system_info().serial)
            assert len(bmc.node.sessions) == 1
    assert serials == [bmc.node.serial] * 3
    assert (pool.opened, pool.reused) == (1, 2)
    pool.close_all()
    assert bmc.node.sessions == {}, "a worker shutting down logs its sessions out"


def test_a_session_the_bmc_forgot_is_opened_again(hall):
    bmc = hall.bmc(1)
    pool = SessionPool(idle_s=KEPT_S)
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
    bmc.node.sessions.clear()  # the BMC rebooted (a BMC firmware update does this)
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        assert client.system_info().serial == bmc.node.serial
    assert len(bmc.node.sessions) == 1
    pool.close_all()


def test_a_session_the_bmc_closed_first_is_let_go_without_a_new_login(hall, caplog):
    # A pool may keep a session longer than the BMC does (Lenovo XCC closes one idle for 300 s):
    # its logout then answers 401. Logging in again only to log out left a new session behind on
    # the BMC, holding one of its few slots until the BMC's own timeout.
    bmc = hall.bmc(0)
    pool = SessionPool(idle_s=KEPT_S)
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
    bmc.node.sessions.clear()  # the BMC's idle timeout came first
    with caplog.at_level("WARNING", logger="provisioning.redfish"):
        pool.close_all()
    assert bmc.node.sessions == {}, "no session left behind by the logout"
    assert not caplog.records, "a session the BMC already closed is not a failed logout"


def test_a_client_whose_connection_failed_is_not_lent_again(hall):
    bmc = hall.bmc(2)
    pool = SessionPool(idle_s=KEPT_S)
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
    hall.set_fault(2, "bmc_unreachable")
    with pytest.raises(BmcUnreachable), pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
    assert pool.idle_count() == 0
    hall.clear_fault(2)
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        assert client.system_info().serial == bmc.node.serial
    assert pool.opened == 2
    pool.close_all()


def test_an_idle_session_is_logged_out_not_reused(hall):
    bmc = hall.bmc(0)
    pool = SessionPool(idle_s=0)
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
    first = set(bmc.node.sessions.values())
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
        assert not first & set(bmc.node.sessions.values()), "the stale session was logged out"
    assert pool.opened == 2
    pool.close_all()


def _connections_to(bmc) -> int:
    """This process's open TCP connections to the BMC."""
    port = urlsplit(bmc.https_url).port
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def test_a_session_idle_for_minutes_is_reused_without_holding_its_connection(hall, settings):
    # Issue 32: at 5,000 nodes a node's next step came about 250 s after its last, on the same
    # worker half the time; kept four minutes, two of every three looks opened a session. Kept
    # longer, the idle clients' connections ran the lab out of file descriptors: the pool keeps
    # the session and closes the connection.
    bmc, other = hall.bmc(0), hall.bmc(1)
    now = [1000.0]
    pool = SessionPool(idle_s=settings.GREENLIGHT_BMC_SESSION_IDLE_S, clock=lambda: now[0])
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
    session = set(bmc.node.sessions)
    assert _connections_to(bmc) == 1
    now[0] += 8 * 60  # eight minutes without a step for this node; another node's step comes
    with pool.lend(_key(other), lambda: lab_client(other)) as client:
        client.system_info()
    assert _connections_to(bmc) == 0, "an idle client holds no connection"
    assert set(bmc.node.sessions) == session, "but keeps its session"
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        assert client.system_info().serial == bmc.node.serial
    assert set(bmc.node.sessions) == session, "the next step sends the same session's token"
    assert (pool.opened, pool.reused) == (2, 1)
    now[0] += settings.GREENLIGHT_BMC_SESSION_IDLE_S + 1
    with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
        client.system_info()
    assert pool.opened == 3, "a session idle past the pool's time is not lent again"
    assert len(bmc.node.sessions) == 1 and set(bmc.node.sessions) != session, "it was logged out"
    pool.close_all()


def test_clients_are_shared_only_under_the_same_credentials(hall):
    bmc = hall.bmc(0)
    assert _key(bmc) != _key(bmc, password="another")
    assert "another" not in repr(_key(bmc, password="another")), "no password in the key"


def test_the_benchmark_counts_what_the_pool_saved_and_what_it_did_not(hall, tmp_path, monkeypatch):
    # Issue 32: at 741 nodes a worker spent about a fifth of its CPU opening sessions and
    # re-reading what an open client caches; these counts say how often, and why.
    monkeypatch.setenv("GREENLIGHT_QUERY_LOG_DIR", str(tmp_path))
    counted = instrumentation._work
    before = {name: dict(entry) for name, entry in counted.items()}
    bmc = hall.bmc(1)
    kept, forgetful = SessionPool(idle_s=KEPT_S), SessionPool(idle_s=0)

    def look(pool: SessionPool) -> None:
        with pool.lend(_key(bmc), lambda: lab_client(bmc)) as client:
            client.system_info()

    look(kept)
    look(kept)
    bmc.node.sessions.clear()  # the BMC forgot it: the next request logs in again
    look(kept)
    look(forgetful)
    look(forgetful)
    kept.close_all()
    forgetful.close_all()

    def added(name: str) -> int:
        return counted.get(name, {}).get("requests", 0) - before.get(name, {}).get("requests", 0)

    # kept: opened, reused, reused with a new login; forgetful: opened, expired and opened.
    names = ("opened", "reused", "relogin", "expired")
    assert [added(f"bmc_session:{name}") for name in names] == [3, 2, 1, 1]
    assert counted["bmc_session:opened"]["cpu_s"] > 0
