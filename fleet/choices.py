"""Choices of the fleet app, each visible status with its colour and icon beside it."""

from django.db import models


class NodeState(models.TextChoices):
    """Where a node is in its life. Transitions live in fleet.lifecycle, nowhere else."""

    ENROLLED = "enrolled", "Enrolled"
    PROVISIONING = "provisioning", "Provisioning"
    VALIDATING = "validating", "Validating"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    IN_SERVICE = "in_service", "In service"
    FAILED = "failed", "Failed"
    QUARANTINED = "quarantined", "Quarantined"
    BREAK_FIX = "break_fix", "Break/fix"
    RELEASING = "releasing", "Releasing"
    WIPING = "wiping", "Wiping"
    DECOMMISSIONED = "decommissioned", "Decommissioned"


# Colour (a CSS class suffix) and icon per state: the badge, the rack slot and the API agree
# because all of them read these maps. Icons make the state readable without colour; each is a
# glyph of DejaVu Sans (no emoji), so it renders on a bare Debian browser too.
NODE_STATE_COLORS = {
    NodeState.ENROLLED: "gray",
    NodeState.PROVISIONING: "blue",
    NodeState.VALIDATING: "sky",
    NodeState.AWAITING_APPROVAL: "amber",
    NodeState.IN_SERVICE: "green",
    NodeState.FAILED: "red",
    NodeState.QUARANTINED: "purple",
    NodeState.BREAK_FIX: "orange",
    NodeState.RELEASING: "teal",
    NodeState.WIPING: "teal",
    NodeState.DECOMMISSIONED: "black",
}
NODE_STATE_ICONS = {
    NodeState.ENROLLED: "○",
    NodeState.PROVISIONING: "↻",
    NodeState.VALIDATING: "⚗",
    NodeState.AWAITING_APPROVAL: "?",
    NodeState.IN_SERVICE: "✓",
    NodeState.FAILED: "✗",
    NodeState.QUARANTINED: "⚠",
    NodeState.BREAK_FIX: "⚒",
    NodeState.RELEASING: "⇢",
    NodeState.WIPING: "⌫",
    NodeState.DECOMMISSIONED: "■",
}


class DocumentStatus(models.TextChoices):
    """Life of a versioned document (golden manifest, acceptance profile)."""

    DRAFT = "draft", "Draft"
    PUBLISHED = "published", "Published"
    RETIRED = "retired", "Retired"


DOCUMENT_STATUS_COLORS = {
    DocumentStatus.DRAFT: "gray",
    DocumentStatus.PUBLISHED: "green",
    DocumentStatus.RETIRED: "black",
}


class ComponentKind(models.TextChoices):
    """Kinds of observed components. Firmware targets in a manifest use the first six."""

    BMC = "bmc", "BMC"
    BIOS = "bios", "BIOS"
    HGX = "hgx", "HGX baseboard"
    NIC = "nic", "NIC"
    DPU = "dpu", "DPU"
    NVME = "nvme", "NVMe drive"
    GPU = "gpu", "GPU"
    NVSWITCH = "nvswitch", "NVSwitch"
    CPU = "cpu", "CPU"
    PSU = "psu", "Power supply"


class ComponentSource(models.TextChoices):
    """Who last observed a component: the BMC (no serials for in-band parts) or the agent."""

    BMC = "bmc", "BMC"
    AGENT = "agent", "Agent"


class EphemeralBoot(models.TextChoices):
    """How a node boots Greenlight's ephemeral environment (the manifest's `ephemeral.boot`)."""

    VIRTUAL_MEDIA = "virtual_media", "Redfish virtual media (the node's own ISO)"
    UEFI_HTTP = "uefi_http", "UEFI HTTP boot of the node's own ISO"
    PXE = "pxe", "PXE: the site's DHCP chains to the node's iPXE script"


FIRMWARE_TARGETS = (
    ComponentKind.BMC,
    ComponentKind.BIOS,
    ComponentKind.HGX,
    ComponentKind.NIC,
    ComponentKind.DPU,
    ComponentKind.NVME,
)


class EventKind(models.TextChoices):
    """What an event records. The audit log, the live feed and the timeline read these."""

    STATE_CHANGED = "state_changed", "State changed"
    ENROLLED = "enrolled", "Enrolled"
    UPDATED = "updated", "Updated"
    RUN_STARTED = "run_started", "Run started"
    RUN_FINISHED = "run_finished", "Run finished"
    RUN_ACTION = "run_action", "Operator action on a run"
    RUN_TAKEN_OVER = "run_taken_over", "Run taken over from a lost worker"
    PHASE_STARTED = "phase_started", "Phase started"
    PHASE_WAITING = "phase_waiting", "Phase waiting"
    PHASE_DONE = "phase_done", "Phase done"
    PHASE_SKIPPED = "phase_skipped", "Phase skipped"
    PHASE_RETRY = "phase_retry", "Phase retried"
    PHASE_FAILED = "phase_failed", "Phase failed"
    GATE_RESULT = "gate_result", "Gate result"
    DECISION = "decision", "Decision"
    AGENT_CHECKIN = "agent_checkin", "Agent check-in"
    AGENT_REFUSED = "agent_refused", "Agent refused"
    BOOT_REFUSED = "boot_refused", "Boot request refused"
    BMC_CERT_PINNED = "bmc_cert_pinned", "BMC certificate pinned"
    AUDIT = "audit", "Drift audit"
    WIPE = "wipe", "Wipe"
    ATTENTION = "attention", "Needs a person"
    # An in-service node lent to another node's fabric gate as its NCCL partner, for the gate.
    FABRIC_PARTNER = "fabric_partner", "Borrowed as fabric partner"
    TEST = "test", "Test"
