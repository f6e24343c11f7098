"""The webhook on node state changes: signed, sent after commit, retried when refused."""

from __future__ import annotations

import json

import pytest
from django.db import transaction

from fleet import webhooks
from fleet.choices import NodeState
from fleet.lifecycle import transition
from tests import factories

from .conftest import BMC_PASSWORD, BMC_USERNAME
from .receivers import webhook_receiver

SECRET = "test-webhook-secret"


@pytest.fixture
def node(db, rack, manifest):
    return factories.make_node(
        "SN-HOOK", rack=rack, position=7, bmc_username=BMC_USERNAME, bmc_password=BMC_PASSWORD
    )


def _configure(settings, *urls, retries=8):
    settings.GREENLIGHT_WEBHOOK_URLS = list(urls)
    settings.GREENLIGHT_WEBHOOK_SECRET = SECRET
    settings.GREENLIGHT_WEBHOOK_MAX_RETRIES = retries


def test_state_change_is_posted_signed(
    node, bob, settings, eager_celery, django_capture_on_commit_callbacks
):
    with webhook_receiver() as receiver:
        _configure(settings, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            result = transition(node, NodeState.PROVISIONING, actor=bob, reason="first run")
        (delivery,) = receiver.received
    assert delivery.path == "/hooks/greenlight"
    signature = delivery.headers["X-Greenlight-Signature"]
    assert webhooks.verify(delivery.body, SECRET, signature)
    assert not webhooks.verify(delivery.body + b" ", SECRET, signature)
    assert delivery.headers["X-Greenlight-Delivery"] == str(result.event_id)
    assert delivery.headers["X-Greenlight-Event"] == "node.state_changed"
    payload = json.loads(delivery.body)
    assert payload["from"] == "enrolled" and payload["to"] == "provisioning"
    assert payload["node"]["serial"] == "SN-HOOK" and payload["node"]["rack"] == "R01"
    assert payload["actor"] == "bob" and payload["reason"] == "first run"
    assert BMC_PASSWORD.encode() not in delivery.body
    assert BMC_USERNAME.encode() not in delivery.body


def test_refused_delivery_is_retried_with_the_same_body(
    node, settings, eager_celery, django_capture_on_commit_callbacks
):
    with webhook_receiver(answers=[500, 503]) as receiver:
        _configure(settings, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            transition(node, NodeState.PROVISIONING)
        received = list(receiver.received)
    assert len(received) == 3  # 500, 503, then accepted
    assert len({r.body for r in received}) == 1
    assert len({r.headers["X-Greenlight-Delivery"] for r in received}) == 1
    assert all(
        webhooks.verify(r.body, SECRET, r.headers["X-Greenlight-Signature"]) for r in received
    )


def test_delivery_gives_up_after_its_budget(
    node, settings, eager_celery, django_capture_on_commit_callbacks
):
    with webhook_receiver(answers=[500] * 10) as receiver:
        _configure(settings, receiver.url, retries=2)
        with django_capture_on_commit_callbacks(execute=True):
            transition(node, NodeState.PROVISIONING)
        assert len(receiver.received) == 3
    node.refresh_from_db()
    assert node.state == NodeState.PROVISIONING  # a dead receiver never undoes a transition


def test_each_receiver_gets_its_own_delivery(
    node, settings, eager_celery, django_capture_on_commit_callbacks
):
    with webhook_receiver(answers=[500]) as flaky, webhook_receiver() as steady:
        _configure(settings, flaky.url, steady.url)
        with django_capture_on_commit_callbacks(execute=True):
            transition(node, NodeState.PROVISIONING)
        assert len(flaky.received) == 2 and len(steady.received) == 1


def test_nothing_is_sent_for_a_rolled_back_transition(
    node, settings, eager_celery, django_capture_on_commit_callbacks
):
    with webhook_receiver() as receiver:
        _configure(settings, receiver.url)
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            with pytest.raises(RuntimeError), transaction.atomic():
                transition(node, NodeState.PROVISIONING)
                raise RuntimeError("the caller's transaction fails after the move")
        assert callbacks == [] and receiver.received == []


def test_no_receivers_means_nothing_queued(node, settings, django_capture_on_commit_callbacks):
    settings.GREENLIGHT_WEBHOOK_URLS = []
    with django_capture_on_commit_callbacks() as callbacks:
        transition(node, NodeState.PROVISIONING)
    # Only the live-update publish is queued, no webhook.
    assert all("enqueue" not in getattr(cb, "__qualname__", "") for cb in callbacks)


def test_backoff_doubles_and_is_capped_at_the_longest_countdown(settings):
    assert [webhooks.backoff_s(n) for n in range(4)] == [5, 10, 20, 40]
    # A retry held past the broker's visibility timeout would be redelivered: a second POST.
    assert webhooks.backoff_s(30) == settings.GREENLIGHT_MAX_COUNTDOWN_S == 60
    # The default retries still try a receiver for as long as before the cap (21 minutes).
    tries = range(settings.GREENLIGHT_WEBHOOK_MAX_RETRIES)
    assert sum(webhooks.backoff_s(n) for n in tries) / 60 > 20


def test_unreachable_receiver_is_a_delivery_failure():
    with pytest.raises(webhooks.DeliveryFailed, match="127.0.0.1:9"):
        webhooks.deliver("http://127.0.0.1:9/", "{}", 1, secret="x")
