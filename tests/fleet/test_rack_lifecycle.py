"""The rack lifecycle of a rack-scale system (issue 34): every allowed and every forbidden move,
generated from its one table; a replaced tray sends the rack back to discovering; the declared
members and how a BMC's Redfish resource identifies each."""

from __future__ import annotations

import itertools

import pytest
from django.core.exceptions import ValidationError

from fleet.choices import EventKind, NodeKind, NodeState, RackState
from fleet.lifecycle import TransitionConflict
from fleet.models import Event, Node, RackSystem, SkuMember
from fleet.rack_lifecycle import (
    RACK_RUN_STARTABLE_STATES,
    TRANSITIONS,
    MemberReplaceRefused,
    RackTransitionNotAllowed,
    replace_member,
    transition,
)
from fleet.rack_scale import member_kind_for, plural
from tests import factories

pytestmark = pytest.mark.django_db
ALLOWED = sorted(TRANSITIONS)
FORBIDDEN = [p for p in itertools.product(RackState.values, repeat=2) if p not in TRANSITIONS]


def _system_in(state: str) -> RackSystem:
    rack = factories.make_rack("NVL-T", height_u=48)
    system = RackSystem.objects.create(rack=rack, sku=factories.make_rack_sku())
    # Test set-up only: put the rack in the starting state without going through the table.
    RackSystem.objects.filter(pk=system.pk).update(state=state)
    system.refresh_from_db()
    return system


def test_every_state_has_a_way_out_and_every_move_a_sentence():
    assert all(why.endswith(".") for why in TRANSITIONS.values())
    assert {f for f, _ in TRANSITIONS} == set(RackState.values)
    assert RACK_RUN_STARTABLE_STATES == {
        RackState.DISCOVERING, RackState.DEGRADED, RackState.AWAITING_APPROVAL,
    }  # fmt: skip


@pytest.mark.parametrize(("from_state", "to_state"), ALLOWED)
def test_allowed_move_changes_the_rack_and_writes_a_rack_event(from_state, to_state, bob):
    system = _system_in(from_state)
    result = transition(system, to_state, actor=bob, reason="test")
    system.refresh_from_db()
    assert system.state == to_state
    event = Event.objects.get(pk=result.event_id)
    assert (event.kind, event.node, event.rack) == (EventKind.RACK_STATE_CHANGED, None, system.rack)
    assert event.data == {"from": from_state, "to": to_state}
    assert event.actor == bob


@pytest.mark.parametrize(("from_state", "to_state"), FORBIDDEN)
def test_forbidden_move_is_refused_and_changes_nothing(from_state, to_state):
    system = _system_in(from_state)
    with pytest.raises(RackTransitionNotAllowed, match="not an allowed transition"):
        transition(system, to_state)
    system.refresh_from_db()
    assert system.state == from_state
    assert not Event.objects.filter(rack=system.rack).exists()


def test_a_stale_rack_loses_to_whoever_moved_first():
    system = _system_in(RackState.AWAITING_APPROVAL)
    stale = RackSystem.objects.get(pk=system.pk)
    transition(system, RackState.IN_SERVICE)
    with pytest.raises(TransitionConflict, match="someone else acted first"):
        transition(stale, RackState.DEGRADED)
    assert RackSystem.objects.get(pk=system.pk).state == RackState.IN_SERVICE


def test_replacing_a_tray_sends_the_rack_back_to_discovering(bob):
    system, members = factories.make_nvl72_rack()
    RackSystem.objects.filter(pk=system.pk).update(state=RackState.IN_SERVICE)
    system.refresh_from_db()
    old = members["switch_tray"][3]
    spare = factories.make_node("SPARE-SW", rack=None, position=None, sku=old.sku,
                                kind=NodeKind.SWITCH_TRAY)  # fmt: skip

    replace_member(old, spare, actor=bob)

    system.refresh_from_db()
    assert system.state == RackState.DISCOVERING
    old.refresh_from_db()
    spare.refresh_from_db()
    assert old.state == NodeState.DECOMMISSIONED and old.member_index is None
    assert (spare.rack_id, spare.position, spare.member_index) == (system.rack_id, 16, 4)
    event = Event.objects.filter(kind=EventKind.RACK_STATE_CHANGED).latest("id")
    assert "switch tray 4 replaced" in event.message.lower()
    assert event.data["replaced"] == old.serial and event.data["by"] == "SPARE-SW"
    # The replaced tray is no member any more: the rack is whole again with the spare.
    assert system.missing_members() == []
    assert spare in system.members() and old not in system.members()


def test_a_tray_is_replaced_only_by_one_of_its_kind(bob):
    system, members = factories.make_nvl72_rack()
    shelf = factories.make_node("SPARE-PS", rack=None, position=None, kind=NodeKind.POWER_SHELF)
    with pytest.raises(MemberReplaceRefused, match="is a power shelf, not a NVLink switch tray"):
        replace_member(members["switch_tray"][0], shelf, actor=bob)
    assert RackSystem.objects.get(pk=system.pk).state == RackState.DISCOVERING


def test_discovery_names_what_is_missing():
    system, members = factories.make_nvl72_rack()
    assert system.missing_members() == []
    assert [len(members[k]) for k in ("power_shelf", "switch_tray", "compute_tray")] == [8, 9, 18]
    Node.objects.filter(pk=members["switch_tray"][0].pk).update(state=NodeState.DECOMMISSIONED)
    assert system.missing_members() == ["8 of 9 NVLink switch trays enrolled"]


def test_a_member_kind_is_identified_from_its_redfish_resource_not_a_dmi_name():
    sku = factories.make_rack_sku()
    declared = list(sku.members.all())
    assert member_kind_for(declared, "Chassis", {"Model": "P4978 NVLink Switch"}) == "switch_tray"
    assert member_kind_for(declared, "System", {"Model": "GB200 NVL72 Compute"}) == "compute_tray"
    # The same model string on another resource, or a property it does not match: no member.
    assert member_kind_for(declared, "System", {"Model": "P4978 NVLink Switch"}) is None
    assert member_kind_for(declared, "Chassis", {"Manufacturer": "PWR-SHELF"}) is None


def test_a_declared_member_is_validated_field_by_field():
    sku = factories.make_rack_sku()
    member = SkuMember(sku=sku, kind="power_shelf", count=8, member_sku=sku,
                       match_pattern="([unclosed")  # fmt: skip
    with pytest.raises(ValidationError) as excinfo:
        member.clean()
    assert "not a regular expression" in excinfo.value.message_dict["match_pattern"][0]
    member.match_pattern = "^PWR"
    with pytest.raises(ValidationError) as excinfo:
        member.clean()
    assert "member_sku" in excinfo.value.message_dict


def test_a_rack_system_needs_a_sku_that_declares_members():
    plain = factories.make_sku()
    system = RackSystem(rack=factories.make_rack("PLAIN"), sku=plain)
    with pytest.raises(ValidationError) as excinfo:
        system.clean()
    assert "declares no members" in excinfo.value.message_dict["sku"][0]


def test_a_rack_member_needs_a_rack_and_a_server_no_member_number():
    sku = factories.make_sku()
    tray = Node(serial="T1", sku=sku, kind=NodeKind.SWITCH_TRAY, bmc_address="https://x")
    with pytest.raises(ValidationError) as excinfo:
        tray.clean()
    assert "needs a rack" in excinfo.value.message_dict["rack"][0]
    server = Node(serial="S1", sku=sku, member_index=3, bmc_address="https://x")
    with pytest.raises(ValidationError) as excinfo:
        server.clean()
    assert "member_index" in excinfo.value.message_dict


@pytest.mark.django_db
def test_the_admin_shows_a_rack_scale_sku_its_members_and_the_rack_system(client):
    system, _ = factories.make_nvl72_rack()
    client.force_login(factories.make_user("root", superuser=True, staff=True))
    page = client.get(f"/admin/fleet/sku/{system.sku_id}/change/").content.decode()
    assert "switch_tray" in page and "power_shelf" in page  # the member inline's rows
    listing = client.get("/admin/fleet/racksystem/").content.decode()
    assert "NVL01" in listing and system.get_state_display() in listing
    assert client.get("/admin/fleet/nvlinkdomain/").status_code == 200


def test_member_kinds_read_as_words_in_the_plural():
    assert [plural(k) for k in ("compute_tray", "switch_tray", "power_shelf")] == [
        "compute trays",
        "NVLink switch trays",
        "power shelves",
    ]
