"""A run's acceptance profile: the version its manifest pins, else the SKU's published one, read
in one query without the join the model's ordering would add (gates read it on many looks)."""

from __future__ import annotations

import pytest

from acceptance.models import AcceptanceProfile
from fleet.choices import DocumentStatus


@pytest.fixture
def pinned(profile) -> AcceptanceProfile:
    return AcceptanceProfile.objects.create(
        sku=profile.sku, version="7", yaml_text=profile.yaml_text, spec={"gates": []}
    )


@pytest.mark.django_db
def test_the_pinned_version_else_the_published_one(profile, pinned, django_assert_num_queries):
    sku_id = profile.sku_id
    with django_assert_num_queries(1) as published_read:
        assert AcceptanceProfile.for_manifest(sku_id, {}) == profile
    with django_assert_num_queries(1) as pinned_read:
        # A version YAML wrote as a number names the same profile.
        assert AcceptanceProfile.for_manifest(sku_id, {"acceptance_profile": 7}) == pinned
    for read in (published_read, pinned_read):
        assert "JOIN" not in read.captured_queries[0]["sql"].upper()
    assert AcceptanceProfile.for_manifest(sku_id, {"acceptance_profile": "8"}) == profile
    assert AcceptanceProfile.for_manifest(None, {}) is None


@pytest.mark.django_db
def test_no_published_profile_is_none(profile):
    AcceptanceProfile.objects.filter(pk=profile.pk).update(status=DocumentStatus.RETIRED)
    assert AcceptanceProfile.for_manifest(profile.sku_id, {}) is None
