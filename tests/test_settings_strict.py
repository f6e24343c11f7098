"""Settings are read strictly: `manage.py check` names a variable it cannot take or does not know.

Each check runs `manage.py check` in a fresh process, as `make test` does (lab mode, the
session's own DATABASE_URL and REDIS_URL), with one kind of mistake added to its environment.
"""

from __future__ import annotations

import subprocess
import sys

from common.checks import READ_ELSEWHERE
from tests.support.processes import ROOT, fresh_settings_env


def check(**variables: str) -> subprocess.CompletedProcess:
    """`GREENLIGHT_LAB_MODE=1 manage.py check` with the test's environment plus `variables`."""
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=fresh_settings_env(**variables),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_environment_make_test_checks_in_passes():
    result = check()
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_a_boolean_that_is_not_a_boolean_fails_check_naming_it():
    result = check(GREENLIGHT_HTTPS="maybe")
    assert result.returncode != 0
    assert "(greenlight.E007) GREENLIGHT_HTTPS: 'maybe' is not a boolean" in result.stderr


def test_a_number_out_of_bounds_or_malformed_fails_check_naming_it():
    result = check(
        GREENLIGHT_POWER_ON_BATCH="0",  # a worker count: at least 1
        GREENLIGHT_STEP_LEASE_S="0",  # a timeout: more than 0
        GREENLIGHT_DB_POOL="many",  # once a crash at import, with no check to name it
    )
    assert result.returncode != 0
    for message in (
        "GREENLIGHT_POWER_ON_BATCH: 0 is below the minimum 1",
        "GREENLIGHT_STEP_LEASE_S: 0 must be greater than 0",
        "GREENLIGHT_DB_POOL: 'many' is not an integer",
    ):
        assert f"(greenlight.E007) {message}" in result.stderr


def test_an_unknown_greenlight_variable_fails_check_naming_it():
    result = check(GREENLIGHT_POWR_ON_BATCH="8")  # misspelt: the batch would silently stay 4
    assert result.returncode != 0
    assert "(greenlight.E008) GREENLIGHT_POWR_ON_BATCH is set" in result.stderr


def test_variables_read_only_under_a_condition_or_elsewhere_are_known():
    # HSTS seconds matter only with HTTPS, the sync period only with NetBox set: still known.
    result = check(
        GREENLIGHT_HSTS_SECONDS="600",
        GREENLIGHT_NETBOX_SYNC_SECONDS="60",
        **dict.fromkeys(READ_ELSEWHERE, "x"),
    )
    assert result.returncode == 0, result.stderr


def test_every_variable_read_elsewhere_has_a_reader_in_the_repository():
    """The allow-list may not outlive its readers: each name appears in code outside the check."""
    checks_module = ROOT / "common" / "checks.py"
    sources = [
        path.read_text()
        for folder in (
            "agent",
            "acceptance",
            "console",
            "fleet",
            "common",
            "greenlight",
            "lab",
            "provisioning",
            "tests",
        )
        for path in (ROOT / folder).rglob("*.py")
        if path != checks_module and path != ROOT / "tests" / "test_settings_strict.py"
    ]
    unread = [name for name in READ_ELSEWHERE if not any(name in text for text in sources)]
    assert unread == []


def test_sentinels_that_are_not_host_port_fail_check_naming_them():
    result = check(REDIS_SENTINELS="127.0.0.1:26379,sentinel-b")
    assert result.returncode != 0
    assert "(greenlight.E007) REDIS_SENTINELS: 'sentinel-b' is not host:port" in result.stderr
