"""Which nodes are behind their SKU's published manifest (provisioning.day2.behind)."""

from __future__ import annotations

import pytest

from fleet.choices import NodeState
from fleet.lifecycle import transition
from fleet.models import Node
from provisioning.choices import RunStatus
from provisioning.day2.behind import behind_nodes, behind_of, by_rack, is_behind, with_manifests
from provisioning.models import Run
from tests import factories
from tests.support.scenes import walk

pytestmark = pytest.mark.django_db
S = NodeState


def on(node: Node, manifest) -> Node:
    """The node was provisioned to `manifest` (what a succeeded run writes)."""
    Node.objects.filter(pk=node.pk).update(manifest=manifest)
    node.refresh_from_db()
    return node


def annotated(node: Node) -> Node:
    return with_manifests(Node.objects.filter(pk=node.pk)).get()


def test_a_node_on_the_published_manifest_is_not_behind_until_a_new_one_is_published(manifest):
    node = on(walk(factories.make_node(), S.IN_SERVICE), manifest)
    assert not is_behind(annotated(node))
    draft = manifest.clone_as_draft()
    assert [n.pk for n in behind_nodes(draft)] == [node.pk], "publishing the draft puts it behind"
    draft.publish()
    behind = behind_of(annotated(node))
    assert behind is not None
    assert behind.words == "Manifest 1.0.0; 1.0.1 is published"
    assert [n.pk for n in behind_nodes(draft)] == [node.pk]


def test_a_node_never_provisioned_is_on_the_manifest_its_latest_run_pins(manifest, profile):
    failed = walk(factories.make_node(), S.FAILED)
    Run.objects.create(node=failed, manifest=manifest, status=RunStatus.FAILED)
    enrolled = factories.make_node()
    manifest.clone_as_draft().publish()
    # A retry of the failed run would bring it to 1.0.0: behind. The enrolled node's first run
    # takes whatever is published: not behind.
    assert is_behind(annotated(failed))
    assert not is_behind(annotated(enrolled))


def test_a_node_provisioned_to_the_published_manifest_is_not_behind_even_if_its_run_is_older(
    manifest,
):
    new = manifest.clone_as_draft()
    new.publish()
    node = on(walk(factories.make_node(), S.IN_SERVICE), new)
    Run.objects.create(node=node, manifest=manifest, status=RunStatus.SUCCEEDED)
    assert not is_behind(annotated(node))
    assert not behind_nodes(new).exists()


def test_decommissioned_nodes_and_other_skus_are_never_behind(manifest):
    gone = on(factories.make_node(), manifest)
    walk(gone, S.FAILED)
    transition(gone, S.DECOMMISSIONED, actor_label="test")
    other_sku = factories.make_sku("l40s-4gpu")
    other = factories.make_node(sku=other_sku)
    draft = manifest.clone_as_draft()
    assert not behind_nodes(draft).exists()
    draft.publish()
    assert behind_of(annotated(gone)) is None
    assert behind_of(annotated(other)) is None


def test_behind_of_reads_the_facts_itself_when_the_node_is_not_annotated(manifest):
    node = on(factories.make_node(), manifest)
    manifest.clone_as_draft().publish()
    assert behind_of(Node.objects.get(pk=node.pk)).published_version == "1.0.1"


def test_by_rack_groups_in_rack_order(manifest):
    r1, r2 = factories.make_rack("R01"), factories.make_rack("R02")
    a = on(factories.make_node(rack=r1, position=1), manifest)
    b = on(factories.make_node(rack=r2, position=1), manifest)
    c = on(factories.make_node(rack=r1, position=2), manifest)
    groups = by_rack(behind_nodes(manifest.clone_as_draft()))
    assert [(g.name, [n.serial for n in g.nodes]) for g in groups] == [
        ("hall-1/R01", [a.serial, c.serial]),
        ("hall-1/R02", [b.serial]),
    ]
