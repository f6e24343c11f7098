"""The agent protocol: paths and command kinds, shared by the agent and Greenlight's tests.

Agent -> Greenlight (token in `Authorization: Bearer`, except check-in which issues it):
  POST /agent/v1/checkin                {serial, macs, boot_id, environment, agent_url, version}
  POST /agent/v1/heartbeat              {agent_url}
  POST /agent/v1/commands/<id>/log      {text}
  POST /agent/v1/commands/<id>/result   {status: done|failed, exit_code, result, output}
Greenlight -> agent (same token):
  GET  /v1/ping                         -> {boot_id, environment, serial}
  GET  /v1/inventory                    -> {gpus, nics, dpus, drives, os_image} (read-only)
  POST /v1/commands                     {id, kind, params} -> 202 {id, status}
  GET  /v1/commands/<id>                -> {id, kind, status, exit_code, result, output}
"""

CHECKIN = "/agent/v1/checkin"
HEARTBEAT = "/agent/v1/heartbeat"


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

# Tools run_tool may run (the acceptance gates' tools).
TOOLS = (
    "attestation",
    "dcgm",
    "nccl",
    "nvbandwidth",
    "fio",
    "gpu-burn",
    "nvidia-smi",
    "xid",
    "soak",
)
