"""The rack page while a real lab rack provisions through the pipeline: it goes green, live."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.db import connections
from django.test import Client
from playwright.sync_api import expect, sync_playwright

from acceptance import decisions
from fleet.models import Node
from lab.run import LabRun, LabRunConfig

from .conftest import CHROMIUM_ARGS, SCREENSHOTS

# ms: upper bounds on conditions, never pauses. A lab rack takes a while on a busy machine.
PROVISIONED = 600_000
TIMEOUT = 30_000


@pytest.mark.browser
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_rack_page_goes_green_while_a_lab_rack_provisions(bob, tmp_path, monkeypatch):
    config = LabRunConfig(nodes=2, faults="none", speed=400, soak_hours=0.25, timeout_s=600)
    with LabRun(config, log_dir=tmp_path) as lab:
        nodes = list(Node.objects.filter(pk__in=[n.pk for n in lab.nodes]))
        rack_id = nodes[0].rack_id
        client = Client()
        client.force_login(bob)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        runs = lab.start_pass()
        # While Playwright runs, this thread counts as async: the ORM goes to a thread of its own.
        monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        pool = ThreadPoolExecutor(max_workers=1)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                context = browser.new_context(viewport={"width": 1440, "height": 1000})
                context.add_cookies(
                    [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": lab.env_url}]
                )
                page = context.new_page()
                page.goto(f"{lab.env_url}/racks/{rack_id}/")
                expect(page.locator("#live-status")).to_have_attribute(
                    "data-state", "open", timeout=TIMEOUT
                )
                page.evaluate("window.__sameDocument = true")
                for node in nodes:
                    expect(page.locator(f"#slot-{node.pk}")).to_have_attribute(
                        "data-state", "awaiting_approval", timeout=PROVISIONED
                    )
                assert pool.submit(lab.wait, runs).result(timeout=60)
                made = pool.submit(lambda: decisions.approve_all_passed(nodes[0].rack, bob)).result(
                    timeout=60
                )
                assert len(made) == len(nodes)
                for node in nodes:
                    green = page.locator(f"#slot-{node.pk}")
                    expect(green).to_have_attribute("data-state", "in_service", timeout=TIMEOUT)
                    expect(green).to_have_class(re.compile(r"\bc-green\b"))
                assert page.evaluate("window.__sameDocument") is True  # no reload happened
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SCREENSHOTS / "lab-rack-green.png"), full_page=True)
                browser.close()
        finally:
            pool.submit(connections.close_all).result()
            pool.shutdown()
