"""Choices of the provisioning app, each visible status with its colour."""

from django.db import models


class RunKind(models.TextChoices):
    PROVISION = "provision", "Provision"
    REPROVISION = "reprovision", "Re-provision"
    WIPE = "wipe", "Tenant release wipe"
    # The gates again on the installed OS, without firmware, erase or reimage.
    REVALIDATE = "revalidate", "Re-validate"
    # A node reported suspect in service: drained from its scheduler, then re-validated (or
    # reprovisioned if its profile says so), then re-admitted or sent to break/fix.
    SUSPECT = "suspect", "Suspect-node check"
    # Asked for by a tenant platform before it hands an unallocated in-service node out: drained,
    # then the profile's gates (the burn-in soak among them) on the installed OS.
    BURN_IN = "burn_in", "Pre-allocation burn-in"
    # A rolling upgrade of an in-service node to its SKU's newly published manifest: drained
    # from its scheduler, then reprovisioned (phases already right are skipped) and re-validated.
    UPGRADE = "upgrade", "Upgrade to a new manifest"


# The runs that take an in-service node out and bring it back: drain, re-check, re-admit.
TAKE_OUT_KINDS = (RunKind.SUSPECT, RunKind.BURN_IN, RunKind.UPGRADE)


class RunStatus(models.TextChoices):
    """Where a run is. QUEUED/RUNNING/WAITING are active: at most one such run per node."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    WAITING = "waiting", "Waiting"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"


ACTIVE_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING)

RUN_STATUS_COLORS = {
    RunStatus.QUEUED: "gray",
    RunStatus.RUNNING: "blue",
    RunStatus.WAITING: "indigo",
    RunStatus.SUCCEEDED: "green",
    RunStatus.FAILED: "red",
    RunStatus.ABORTED: "black",
}


class PhaseStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    WAITING = "waiting", "Waiting"
    DONE = "done", "Done"
    SKIPPED = "skipped", "Skipped"
    FAILED = "failed", "Failed"


class Stage(models.TextChoices):
    """Where a phase is inside itself, saved before it acts so a resumed look picks up there."""

    NONE = "", "Not begun"
    # Waiting on an agent command of the phase's own kind.
    RUNNING = "running", "Running the gate's tools"
    SOAKING = "soaking", "Soaking a chunk"
    RESETTING = "resetting", "Resetting GPUs"
    # The attestation gate: the TPM's keys first, then the quote over Greenlight's nonce.
    TPM_KEYS = "keys", "Reading the TPM's keys"
    TPM_QUOTE = "quote", "Quoting the TPM"
    FLASHING = "flashing", "Flashing firmware"
    ERASING = "erasing", "Erasing drives"
    INSTALLING = "installing", "Installing the OS"
    # Waiting on the node or its BMC.
    READY = "ready", "In the ephemeral environment"
    REBOOTING = "rebooting", "Rebooting"
    POWER_CYCLE = "power_cycle", "Waiting for an AC power cycle"
    RAMPING = "ramping", "Powering on (staggered)"
    PUSHING = "pushing", "Pushing firmware to the BMC"
    UPDATING = "updating", "BMC updating firmware"
    # Dell: the host was reset for an update job that waited for it; the job runs in POST.
    APPLYING = "applying", "Host reset; BMC applying the update"
    # GB200 aux power cycle or Lenovo XCC manager reset: the new image is being made to run.
    ACTIVATING = "activating", "Activating new firmware"
    # A server's BMC flashed its new image and restarts itself with it: no host reset.
    BMC_RESTARTING = "bmc_restarting", "BMC restarting with its new image"
    # Releasing a node from its tenant's scheduler.
    CORDONING = "cordoning", "Cordoning"
    DRAINING = "draining", "Draining"


PHASE_STATUS_COLORS = {
    PhaseStatus.PENDING: "gray",
    PhaseStatus.RUNNING: "blue",
    PhaseStatus.WAITING: "indigo",
    PhaseStatus.DONE: "green",
    PhaseStatus.SKIPPED: "teal",
    PhaseStatus.FAILED: "red",
}


class AgentEnvironment(models.TextChoices):
    EPHEMERAL = "ephemeral", "Ephemeral (PXE) environment"
    HOST_OS = "host_os", "Installed host OS"


class CommandStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    SENT = "sent", "Sent to the agent"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    LOST = "lost", "Lost (agent rebooted)"


class WipeStatus(models.TextChoices):
    """Where a tenant release stands: it follows its nodes until each is back in service."""

    REQUESTED = "requested", "Requested"
    # Draining, erasing, reimaging, re-validating or awaiting approval: some node is not back yet.
    IN_PROGRESS = "in_progress", "In progress"
    # Every node erased (a passed certificate) and back in service.
    RETURNED = "returned", "Returned"
    # A node's erase failed, or its run failed or was aborted: the request names it and why.
    FAILED = "failed", "Failed"


class CertificateResult(models.TextChoices):
    PASSED = "passed", "Passed"
    FAILED = "failed", "Failed"


# NIST SP 800-88 Rev. 1 names what a certificate proves; the technique is what the drive did.
ERASE_STANDARD = "NIST SP 800-88 Rev. 1"
ERASE_PURPOSE = "Purge by cryptographic erase"


class EraseTechnique(models.TextChoices):
    """How a drive was crypto-erased, as the agent reports it (chosen from what the drive supports)."""

    NVME_SANITIZE_CRYPTO = "nvme_sanitize_crypto", "NVMe Sanitize, Crypto Erase action"
    NVME_FORMAT_CRYPTO = "nvme_format_crypto", "NVMe Format, cryptographic erase (SES=2)"
    OPAL_PSID_REVERT = "opal_psid_revert", "TCG Opal PSID revert"


CERTIFICATE_RESULT_COLORS = {
    CertificateResult.PASSED: "green",
    CertificateResult.FAILED: "red",
}

WIPE_STATUS_COLORS = {
    WipeStatus.REQUESTED: "gray",
    WipeStatus.IN_PROGRESS: "blue",
    WipeStatus.RETURNED: "green",
    WipeStatus.FAILED: "red",
}


class RolloutState(models.TextChoices):
    """Where a rolling upgrade stands. Only a running rollout starts runs."""

    RUNNING = "running", "Running"
    # Runs in flight go on; no new node starts until it is resumed.
    PAUSED = "paused", "Paused"
    # Stopped for good by a person (or because its manifest is no longer the published one).
    CANCELLED = "cancelled", "Cancelled"
    # Every node is done or failed.
    FINISHED = "finished", "Finished"


OPEN_ROLLOUT_STATES = (RolloutState.RUNNING, RolloutState.PAUSED)

ROLLOUT_STATE_COLORS = {
    RolloutState.RUNNING: "blue",
    RolloutState.PAUSED: "amber",
    RolloutState.CANCELLED: "black",
    RolloutState.FINISHED: "green",
}


class RolloutNodeStatus(models.TextChoices):
    """One node of a rolling upgrade."""

    WAITING = "waiting", "Waiting"
    # Its run (a reprovision, or drain then reprovision for an in-service node) is under way.
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    # It could not start or its run failed: the reason is on the row; the others go on.
    FAILED = "failed", "Failed"


ROLLOUT_NODE_STATUS_COLORS = {
    RolloutNodeStatus.WAITING: "gray",
    RolloutNodeStatus.RUNNING: "blue",
    RolloutNodeStatus.DONE: "green",
    RolloutNodeStatus.FAILED: "red",
}


class RackRunStatus(models.TextChoices):
    """Where a rack run stands. Only a running one starts members."""

    RUNNING = "running", "Running"
    # Every stage done and verified.
    SUCCEEDED = "succeeded", "Succeeded"
    # A member failed past its retries, or a stage ran past its time limit: the reason names it.
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


OPEN_RACK_RUN_STATUSES = (RackRunStatus.RUNNING,)

RACK_RUN_STATUS_COLORS = {
    RackRunStatus.RUNNING: "blue",
    RackRunStatus.SUCCEEDED: "green",
    RackRunStatus.FAILED: "red",
    RackRunStatus.CANCELLED: "black",
}


class RackStageStatus(models.TextChoices):
    """One stage of a rack run."""

    PENDING = "pending", "Pending"
    # Its members are starting, in flight or settling.
    RUNNING = "running", "Running"
    # Every member settled; the stage's check (verify) is being observed.
    VERIFYING = "verifying", "Verifying"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


RACK_STAGE_STATUS_COLORS = {
    RackStageStatus.PENDING: "gray",
    RackStageStatus.RUNNING: "blue",
    RackStageStatus.VERIFYING: "indigo",
    RackStageStatus.DONE: "green",
    RackStageStatus.FAILED: "red",
}


class RackMemberStatus(models.TextChoices):
    """One member of one stage of a rack run."""

    WAITING = "waiting", "Waiting"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    # Past its retries (or it could not start): the reason is on the row and stops the rack run.
    FAILED = "failed", "Failed"


RACK_MEMBER_STATUS_COLORS = {
    RackMemberStatus.WAITING: "gray",
    RackMemberStatus.RUNNING: "blue",
    RackMemberStatus.DONE: "green",
    RackMemberStatus.FAILED: "red",
}
