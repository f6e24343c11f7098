"""The agent protocol: paths and command kinds, shared by the agent and Greenlight.

The agent only ever connects out: Greenlight never opens a connection into a node, so it never
calls an address a node declares, and a node behind NAT works the same. Every request but the
check-in carries the session's token (`Authorization: Bearer`).

  POST /agent/v1/checkin                {serial, macs, boot_id, environment, credential, version,
                                         inventory} -> {token, node_id, boot_id, poll_s}
  POST /agent/v1/poll                   {known: [command ids this boot holds]}
                                        -> {commands: [{id, kind, params}], poll_s}
  POST /agent/v1/commands/<id>/log      {text}
  POST /agent/v1/commands/<id>/result   {status: done|failed, exit_code, result, output,
                                         inventory?} -> {ok, poll_s}

The boot credential is what earns a token: Greenlight put it into the boot medium it made for
this node (the per-node ISO's kernel command line, or the per-node iPXE script), or, for the
installed OS, os_install wrote it into the install record on the boot disk.
"""

CHECKIN = "/agent/v1/checkin"
POLL = "/agent/v1/poll"

# Seconds the agent keeps an idle connection to Greenlight for its next request. Every interval
# Greenlight tells an agent is shorter (provisioning/agents/intervals.py, a system check says
# so), and the node plane keeps a connection longer (greenlight/node_gunicorn.py), so no poll
# sets up TCP and TLS again, and the server never closes one under a request being sent.
KEEPALIVE_S = 90.0


def command_log_path(command_id: int) -> str:
    return f"/agent/v1/commands/{command_id}/log"


def command_result_path(command_id: int) -> str:
    return f"/agent/v1/commands/{command_id}/result"


# Command kinds the agent understands.
INVENTORY = "inventory"
FLASH_FIRMWARE = "flash_firmware"
SECURE_ERASE = "secure_erase"
INSTALL_OS = "install_os"
RUN_TOOL = "run_tool"
RUN_TOOLS = "run_tools"
RESET_GPUS = "reset_gpus"
COMMAND_KINDS = (
    INVENTORY, FLASH_FIRMWARE, SECURE_ERASE, INSTALL_OS, RUN_TOOL, RUN_TOOLS, RESET_GPUS,
)  # fmt: skip
# Commands after which the node's parts or disks may differ: their result carries a fresh
# inventory, which is what Greenlight observes the node by.
CHANGES_INVENTORY = (INVENTORY, FLASH_FIRMWARE, SECURE_ERASE, INSTALL_OS)


def model_fits(wanted: str | None, *labels: str) -> bool:
    """Whether a firmware target for model `wanted` covers a device labelled `labels`.

    A target without a model covers every device of its kind; one with a model covers the
    devices whose model (or name) contains it, case aside ("MZQL27T6HBLA" covers the drive
    model "MZQL27T6HBLA-00A07"). Greenlight's Redfish phases and the agent's flash command
    both decide by this one rule.
    """
    if not wanted:
        return True
    wanted = wanted.lower()
    return any(wanted in label.lower() for label in labels if label)


def firmware_target_for(device: dict, targets: list[dict]) -> dict | None:
    """The first of a flash command's `targets` ({model, version, url, sha256}, per-model ones
    first) that covers `device` (an inventory entry with model and name), or None."""
    labels = (str(device.get("model") or ""), str(device.get("name") or ""))
    return next((t for t in targets if model_fits(t.get("model"), *labels)), None)


# Tools run_tool may run (the acceptance gates' tools, the rack-wide gate's).
TOOLS = (
    "attestation",
    "dcgm",
    "nccl",
    "perftest",
    "nvbandwidth",
    "fio",
    "gpu-burn",
    "nvidia-smi",
    "xid",
    "soak",
    "reference-job",
    # A rack-scale system's compute tray, for the rack-wide fabric verdict (issue 34): its IMEX
    # domain, its NVLink link states, its own addresses (to name it in IMEX's node list) and
    # host name (to name it in dcgmi mndiag's report), and, on one tray, dcgmi mndiag over all.
    "imex",
    "nvlink",
    "host-addresses",
    "hostname",
    "mndiag",
)

# Result fields and their limits: Greenlight refuses a result that does not fit.
MAX_OUTPUT_CHARS = 200_000
EXIT_CODE_RANGE = (-255, 255)
