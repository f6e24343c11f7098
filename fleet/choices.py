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
    # A rack-scale system: its lifecycle moves and its rack run's steps (stages, members, checks).
    RACK_STATE_CHANGED = "rack_state_changed", "Rack state changed"
    RACK_RUN = "rack_run", "Rack run step"
    TEST = "test", "Test"


class NodeKind(models.TextChoices):
    """What a node is: a server, or one member of a rack-scale system (GB200/GB300 NVL72).

    A compute tray is a server with an OS; a switch tray and a power shelf are devices with their
    own BMC and firmware (NVOS, CPLD, BMC) and no OS to install.
    """

    SERVER = "server", "Server"
    COMPUTE_TRAY = "compute_tray", "Compute tray"
    SWITCH_TRAY = "switch_tray", "NVLink switch tray"
    POWER_SHELF = "power_shelf", "Power shelf"


# The kinds a rack-scale system declares as its members, in the order a rack comes up.
MEMBER_KINDS = (NodeKind.POWER_SHELF, NodeKind.SWITCH_TRAY, NodeKind.COMPUTE_TRAY)
# Members with a BMC and firmware but no OS: their runs are out-of-band only.
DEVICE_KINDS = (NodeKind.SWITCH_TRAY, NodeKind.POWER_SHELF)


class RedfishResource(models.TextChoices):
    """The Redfish resource whose property identifies a rack member's kind at enrollment."""

    CHASSIS = "Chassis", "Chassis"
    SYSTEM = "System", "ComputerSystem"
    MANAGER = "Manager", "Manager"


class RackState(models.TextChoices):
    """Where a rack-scale system is in its life. Transitions live in fleet.rack_lifecycle."""

    DISCOVERING = "discovering", "Discovering"
    BRINGING_UP = "bringing_up", "Bringing up"
    VALIDATING = "validating", "Validating"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    IN_SERVICE = "in_service", "In service"
    DEGRADED = "degraded", "Degraded"


RACK_STATE_COLORS = {
    RackState.DISCOVERING: "gray",
    RackState.BRINGING_UP: "blue",
    RackState.VALIDATING: "sky",
    RackState.AWAITING_APPROVAL: "amber",
    RackState.IN_SERVICE: "green",
    RackState.DEGRADED: "orange",
}
RACK_STATE_ICONS = {
    RackState.DISCOVERING: "○",
    RackState.BRINGING_UP: "↻",
    RackState.VALIDATING: "⚗",
    RackState.AWAITING_APPROVAL: "?",
    RackState.IN_SERVICE: "✓",
    RackState.DEGRADED: "⚠",
}


class StageAction(models.TextChoices):
    """What a rack stage does to each of its members (the manifest's `rack_stages[].action`)."""

    # The member's own node run: its phases (firmware among them) and, for a tray, its gates.
    BRING_UP = "bring_up", "Bring up (the member's node run)"
    # A forced power cycle that activates staged firmware (GB200 compute trays).
    POWER_CYCLE = "power_cycle", "Forced power cycle"


class StageVerify(models.TextChoices):
    """What must hold once a stage's members settled, before the next stage starts."""

    # Every member of the stage answers on its BMC; after power shelves, every tray behind them.
    MEMBERS_ANSWER = "members_answer", "Members answer on their BMCs"
    # The NVLink fabric formed across the rack's switch trays.
    FABRIC_FORMED = "fabric_formed", "NVLink fabric formed"
    NONE = "none", "Nothing beyond the members' own runs"
