"""Sign-in throttling for the pages and the admin, security headers, and a clean `check --deploy`.

40 wrong passwords used to leave the right one working at once; there was no CSP, no HSTS behind
a TLS proxy, and the cookies were not Secure.
"""

from __future__ import annotations

import logging
import re
import secrets

import pytest
from django.conf import settings
from django.test import Client

from tests import factories
from tests.hostile.test_production_defaults import manage, production_env
from tests.support.processes import ROOT

PASSWORD = "the-right-password-1"
LOGIN_PAGES = ["/accounts/login/", "/admin/login/"]


@pytest.fixture
def erin(db):
    user = factories.make_user("erin", staff=True)
    user.set_password(PASSWORD)
    user.save()
    return user


def sign_in(client: Client, url: str, password: str, *, address: str = "10.0.0.7"):
    return client.post(url, {"username": "erin", "password": password}, REMOTE_ADDR=address)


@pytest.mark.parametrize("url", LOGIN_PAGES)
def test_wrong_passwords_lock_the_sign_in_with_a_clear_message_and_a_log_entry(erin, url, caplog):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, url, "wrong").status_code == 200  # the form again, with its error
    with caplog.at_level(logging.WARNING, logger="axes"):
        locked = sign_in(client, url, "wrong")
    assert locked.status_code == 429
    lockouts = [r.getMessage() for r in caplog.records if "Locking out" in r.getMessage()]
    assert len(lockouts) == 1, caplog.text
    assert 'username: "erin"' in lockouts[0]
    assert 'ip_address: "10.0.0.7"' in lockouts[0]
    assert "wrong" not in caplog.text

    # Now even the right password is refused, with the message, and no session is made.
    response = sign_in(client, url, PASSWORD)
    assert response.status_code == 429
    text = response.content.decode()
    assert "Too many failed sign-ins for <strong>erin</strong>" in text
    assert "Try again in 0:15:00" in text
    assert "_auth_user_id" not in client.session


def test_the_lock_is_for_that_address_only(erin):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/accounts/login/", "wrong", address="10.0.0.66")
    # Erin, from her own desk, still signs in: an attacker cannot lock her out from elsewhere.
    response = sign_in(Client(), "/accounts/login/", PASSWORD, address="10.0.0.8")
    assert response.status_code == 302


def test_pages_carry_a_content_security_policy(client, alice):
    client.force_login(alice)
    policy = client.get("/").headers["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"


def test_the_api_docs_load_their_script_from_this_origin(client, alice):
    # Swagger UI's own set-up script is served as a file: the policy allows no inline script.
    client.force_login(alice)
    html = client.get("/api/docs/").content.decode()
    assert re.search(r'<script src="[^"]*\?script=', html), html[-800:]


def test_over_https_cookies_are_secure_and_hsts_is_sent(settings, erin):
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    client = Client()
    page = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    assert page.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert page.cookies["csrftoken"]["secure"]
    signed_in = client.post(
        "/accounts/login/",
        {"username": "erin", "password": PASSWORD},
        HTTP_X_FORWARDED_PROTO="https",
    )
    assert signed_in.status_code == 302
    assert signed_in.cookies["sessionid"]["secure"]


def readme_production_env() -> dict[str, str]:
    """The `export` lines of the operator's guide's production section, secrets filled in."""
    readme = (ROOT / "docs" / "operators-guide.md").read_text()
    section = readme.split("## Running on PostgreSQL and a real Redis", 1)[1].split("\n## ", 1)[0]
    env = {}
    for name, value in re.findall(r"^export (\w+)=(\S+)", section, re.MULTILINE):
        env[name] = secrets.token_urlsafe(50) if value == "..." else value
    return env


def test_check_deploy_is_clean_for_the_documented_production_environment(tmp_path):
    env = production_env(tmp_path, **readme_production_env())
    assert env["GREENLIGHT_HTTPS"] == "1"
    result = manage(env, "check", "--deploy")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNING" not in result.stderr + result.stdout


def test_check_deploy_without_https_names_the_cookie_and_hsts_warnings(tmp_path):
    documented = readme_production_env()
    del documented["GREENLIGHT_HTTPS"]
    result = manage(production_env(tmp_path, **documented), "check", "--deploy")
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr


def test_check_deploy_without_a_scheduler_names_the_missing_setting(tmp_path):
    documented = readme_production_env()
    del documented["GREENLIGHT_SCHEDULER"]
    result = manage(production_env(tmp_path, **documented), "check", "--deploy")
    assert result.returncode != 0
    assert "(greenlight.E004) GREENLIGHT_SCHEDULER is not set" in result.stderr
