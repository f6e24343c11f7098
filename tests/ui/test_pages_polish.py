"""The polish of issue 24, without a browser: the legend, banners by level, the favicon, the
admin's name and the enroll-from-BMC page inside the admin's frame with each error once."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from fleet.choices import NODE_STATE_COLORS, NODE_STATE_ICONS, NodeState
from tests.support import scenes

pytestmark = pytest.mark.django_db


def legend_items(html: str) -> list[tuple[str, str, str]]:
    legend = re.search(r'<ul class="legend badges" id="legend".*?</ul>', html, re.S)
    assert legend, "no legend on the page"
    return re.findall(
        r'<li data-state="([a-z_]+)"><span class="badge c-([a-z]+)"[^>]*>'
        r'<span class="ico" aria-hidden="true">(.)</span>',
        legend.group(0),
    )


@pytest.mark.parametrize("page", ["console:overview", "console:rack"])
def test_the_legend_lists_every_state_with_its_colour_and_icon(client, bob, rack, page):
    client.force_login(bob)
    url = reverse(page, args=[rack.pk]) if page == "console:rack" else reverse(page)
    html = client.get(url).content.decode()
    expected = [(s.value, NODE_STATE_COLORS[s], NODE_STATE_ICONS[s]) for s in NodeState]
    assert legend_items(html) == expected
    for state in NodeState:
        assert f"{state.label}</span>" in html


def test_an_upload_that_cannot_be_judged_shows_a_red_banner(client, bob, rack, manifest):
    (node,) = scenes.build_rack(rack, {NodeState.IN_SERVICE: 1})
    client.force_login(bob)
    url = reverse("console:node-upload", args=[node.pk])
    page = client.post(url, {"tool": "fio", "output": "this is not fio output"}, follow=True)
    html = page.content.decode()
    banner = re.search(r'<li class="msg ([a-z ]+)" role="([a-z]+)">([^<]*)</li>', html)
    assert banner, html[:2000]
    assert banner.groups()[:2] == ("error", "alert")
    assert "fio output error (no JSON object in the output)" in banner.group(3)
    assert "msg success" not in html


def test_a_refused_form_is_a_red_banner_and_a_done_move_a_green_one(client, bob, rack, manifest):
    (node,) = scenes.build_rack(rack, {NodeState.ENROLLED: 1})
    client.force_login(bob)
    refused = client.post(
        reverse("console:node-upload", args=[node.pk]), {"tool": "nope"}, follow=True
    )
    assert re.search(
        r'<li class="msg error" role="alert">Upload refused: ', refused.content.decode()
    )
    started = client.post(reverse("console:node-move", args=[node.pk, "start"]), follow=True)
    assert re.search(r'<li class="msg success" role="status">', started.content.decode())


def test_the_favicon_answers_and_every_page_links_it(client, bob, rack):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/greenlight/favicon.svg"
    icon = finders.find("greenlight/favicon.svg")
    assert icon and open(icon).read().startswith("<svg")
    client.force_login(bob)
    html = client.get(reverse("console:rack", args=[rack.pk])).content.decode()
    assert '<link rel="icon" href="/static/greenlight/favicon.svg" type="image/svg+xml">' in html


def test_the_admin_is_greenlights(client, alice):
    client.force_login(alice)
    html = client.get(reverse("admin:index")).content.decode()
    assert "Django" not in html
    assert '<div id="site-name"><a href="/admin/">Greenlight administration</a></div>' in html
    assert "<title>Fleet, provisioning and acceptance | Greenlight admin</title>" in html
    assert 'rel="icon" href="/static/greenlight/favicon.svg"' in html


def test_the_enroll_page_is_in_the_admins_frame_and_says_each_error_once(client, alice, sku):
    client.force_login(alice)
    url = reverse("admin:fleet_node_enroll")
    page = client.get(url).content.decode()
    assert 'id="site-name"' in page and 'class="breadcrumbs"' in page
    assert "Enroll a node from its BMC" in page
    assert reverse("admin:fleet_node_changelist") in page  # the breadcrumb back to the nodes

    data = {"bmc": "http://127.0.0.1:9", "username": "root", "password": "s3cret", "sku": sku.pk}
    refused = client.post(url, data)
    assert refused.status_code == 200
    html = refused.content.decode()
    assert html.count("is plain HTTP, which would send the BMC password unencrypted") == 1
    assert "s3cret" not in html

    missing = client.post(url, {**data, "username": ""}).content.decode()
    assert missing.count("This field is required.") == 1
    assert 'class="breadcrumbs"' in missing
