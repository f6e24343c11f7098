"""Readers of the real tools' output: each turns one tool's text into the inventory's dicts.

Pure functions on text, so the tests feed them output recorded from real machines
(tests/agent/samples/). nvme-cli changed its JSON between 1.x (`"key" : value`, `Index`) and
2.x (`"key":value`, `GenericPath`, and `-v` nests namespaces under subsystems); both are read.
"""

from __future__ import annotations

import json
import re
from typing import Any

MELLANOX_VENDOR = "15b3"
# PCI device ids of BlueField DPUs (their integrated ConnectX functions and SoC management
# interfaces), from the PCI ID repository: a ConnectX with these ids is a DPU, not a NIC.
BLUEFIELD_DEVICE_IDS = {
    "a2d0": "BlueField SoC",
    "a2d1": "BlueField SoC",
    "a2d2": "BlueField integrated ConnectX-5",
    "a2d6": "BlueField-2 integrated ConnectX-6 Dx",
    "a2dc": "BlueField-3 integrated ConnectX-7",
    "c2d2": "BlueField SoC management interface",
    "c2d3": "BlueField-2 SoC management interface",
    "c2d5": "BlueField-3 SoC management interface",
}
# Sanitize Capabilities (SANICAP) bits, NVMe base specification 2.0, Identify Controller.
SANICAP_CRYPTO_ERASE = 1 << 0
SANICAP_BLOCK_ERASE = 1 << 1
SANICAP_OVERWRITE = 1 << 2
# Optional Admin Command Support (OACS) bits.
OACS_SECURITY_SEND_RECEIVE = 1 << 0
OACS_FORMAT_NVM = 1 << 1
# Format NVM Attributes (FNA) bit 2: a cryptographic erase is supported as part of a format.
FNA_CRYPTO_ERASE = 1 << 2


class SourceError(ValueError):
    """A tool's output could not be read; the message names the tool."""


def _json(text: str, tool: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{tool}: output is not JSON ({exc.msg} at {exc.pos})") from None


def nvme_namespaces(text: str) -> list[dict[str, Any]]:
    """The namespaces `nvme list -o json` reports: [{path, serial, model, firmware, size}].

    Reads nvme-cli 1.x and 2.x's flat list and 2.x's verbose (subsystem-nested) list.
    """
    data = _json(text or "{}", "nvme list")
    out = []
    for device in data.get("Devices", []):
        if "DevicePath" in device:
            out.append(_flat_namespace(device))
            continue
        for subsystem in device.get("Subsystems", []):
            controllers = subsystem.get("Controllers", [])
            for controller in controllers:
                for namespace in controller.get("Namespaces", []):
                    out.append(_nested_namespace(controller, namespace))
            # A multipath subsystem lists its namespaces once, beside its controllers' paths.
            for namespace in subsystem.get("Namespaces", []):
                out.append(_nested_namespace(controllers[0] if controllers else {}, namespace))
    return out


def _flat_namespace(device: dict) -> dict[str, Any]:
    return {
        "path": device["DevicePath"],
        "serial": str(device.get("SerialNumber", "")).strip(),
        "model": str(device.get("ModelNumber", "")).strip(),
        "firmware": str(device.get("Firmware", "")).strip(),
        "size_bytes": int(device.get("PhysicalSize") or 0),
    }


def _nested_namespace(controller: dict, namespace: dict) -> dict[str, Any]:
    sector = int(namespace.get("SectorSize") or 0)
    return {
        "path": "/dev/" + namespace["NameSpace"],
        "serial": str(controller.get("SerialNumber", "")).strip(),
        "model": str(controller.get("ModelNumber", "")).strip(),
        "firmware": str(controller.get("Firmware", "")).strip(),
        "size_bytes": int(namespace.get("PhysicalSize") or 0)
        or int(namespace.get("MaximumLBA") or 0) * sector,
    }


def nvme_controller(text: str) -> dict[str, Any]:
    """What `nvme id-ctrl -o json` says: serial, model, firmware and the erase capability bits."""
    data = _json(text, "nvme id-ctrl")
    if not isinstance(data, dict) or "sn" not in data:
        raise SourceError("nvme id-ctrl: no serial number (sn) in the output")
    return {
        "serial": str(data["sn"]).strip(),
        "model": str(data.get("mn", "")).strip(),
        "firmware": str(data.get("fr", "")).strip(),
        "sanicap": int(data.get("sanicap") or 0),
        "fna": int(data.get("fna") or 0),
        "oacs": int(data.get("oacs") or 0),
    }


def dmi_system(text: str) -> dict[str, str]:
    """{serial, product, manufacturer} from the System Information record of `dmidecode -t 1`."""
    fields: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if not line.startswith("\t"):
            inside = line.strip() == "System Information"
            continue
        if inside and ":" in line:
            key, _, value = line.strip().partition(":")
            fields[key.strip()] = value.strip()
    if "Serial Number" not in fields:
        raise SourceError("dmidecode: no System Information record with a serial number")
    return {
        "serial": fields["Serial Number"],
        "product": fields.get("Product Name", ""),
        "manufacturer": fields.get("Manufacturer", ""),
    }


LSPCI_LINE = re.compile(
    r"^(?P<slot>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) (?P<cls>.+?) \[(?P<class_id>[0-9a-f]{4})\]: "
    r"(?P<name>.*) \[(?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\]"
)


def pci_devices(text: str) -> list[dict[str, str]]:
    """Every device of `lspci -nn`: {slot, class_id, name, vendor, device}."""
    out = []
    for line in text.splitlines():
        m = LSPCI_LINE.match(line.strip().lower())
        if m is None:
            continue
        slot = m.group("slot")
        out.append(
            {
                "slot": slot if slot.count(":") == 2 else "0000:" + slot,
                "class_id": m.group("class_id"),
                "name": line.strip().split(": ", 1)[1].rsplit(" [", 1)[0].strip(),
                "vendor": m.group("vendor"),
                "device": m.group("device"),
            }
        )
    return out


def bluefield_functions(devices: list[dict[str, str]]) -> list[dict[str, str]]:
    """The PCI functions that belong to a BlueField DPU."""
    return [
        d for d in devices if d["vendor"] == MELLANOX_VENDOR and d["device"] in BLUEFIELD_DEVICE_IDS
    ]


def bluefield_cards(devices: list[dict[str, str]]) -> list[dict[str, str]]:
    """One DPU per BlueField card found by lspci (its functions share a device address).

    Firmware, PSID and serial are unknown without mlxfwmanager: dpu_firmware then sees a drift
    and its flash fails naming the missing tool, rather than skipping a DPU it cannot see.
    """
    cards: dict[str, dict[str, str]] = {}
    for function in bluefield_functions(devices):
        cards.setdefault(
            function["slot"].rsplit(".", 1)[0],
            {
                "name": function["slot"],
                "model": BLUEFIELD_DEVICE_IDS[function["device"]],
                "psid": "",
                "serial": "",
                "firmware": "",
            },
        )
    return list(cards.values())


def mellanox_devices(text: str) -> list[dict[str, str]]:
    """Each device block of `mlxfwmanager --query` (or `mlxup --query`), as a dict.

    {type, part_number, description, psid, pci, serial, firmware, base_mac}
    """
    devices: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    in_versions = False
    for raw in text.splitlines():
        line = raw.strip()
        if re.match(r"^Device #\d+:", line):
            current = {}
            devices.append(current)
            in_versions = False
            continue
        if current is None or not line or line.startswith("---"):
            continue
        if line.startswith("Versions:"):
            in_versions = True
            continue
        if in_versions and re.match(r"^FW\s+\S+", line):
            current["firmware"] = line.split()[1]
            continue
        field = MLX_FIELD.match(raw)
        if field:
            in_versions = False
            key = field.group("key")
            current[_MLX_KEYS.get(key, key.lower())] = field.group("value").strip()
    return [
        {
            "type": d.get("type", ""),
            "part_number": d.get("part_number", ""),
            "description": d.get("description", ""),
            "psid": d.get("psid", ""),
            "pci": d.get("pci", ""),
            "serial": d.get("serial", ""),
            "firmware": d.get("firmware", ""),
            "base_mac": d.get("base_mac", ""),
        }
        for d in devices
    ]


MLX_FIELD = re.compile(r"^ {2}(?P<key>[A-Z][A-Za-z ]*?):\s+(?P<value>.*)$")
_MLX_KEYS = {
    "Device Type": "type",
    "Part Number": "part_number",
    "Description": "description",
    "PSID": "psid",
    "PCI Device Name": "pci",
    "Serial Number": "serial",
    "Base MAC": "base_mac",
    "Base GUID": "base_guid",
    "Status": "status",
}


def is_bluefield(device: dict[str, str]) -> bool:
    """A Mellanox device that is a DPU: its type or description names BlueField."""
    return "bluefield" in (device.get("type", "") + " " + device.get("description", "")).lower()


def physical_links(text: str) -> list[dict[str, str]]:
    """Physical network interfaces of `ip -d -j link`: {name, mac, bus, pci}.

    A physical port has a parent bus (pci, virtio); bridges, bonds, VLANs and ifb do not.
    """
    out = []
    for link in _json(text or "[]", "ip link"):
        if link.get("link_type") not in ("ether", "infiniband") or not link.get("parentbus"):
            continue
        out.append(
            {
                "name": link["ifname"],
                "mac": link.get("permaddr") or link.get("address", ""),
                "bus": link["parentbus"],
                "pci": link.get("parentdev", ""),
            }
        )
    return out


def nvidia_gpus(text: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv,noheader`, keyed by field name.

    The bus id is normalised to the kernel's form ("0000:18:00.0"), as the XID parser reads it.
    """
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            raise SourceError(f"nvidia-smi: expected {len(fields)} fields, got: {line.strip()}")
        row: dict[str, Any] = dict(zip(fields, values, strict=True))
        row["index"] = int(row["index"])
        if "pci.bus_id" in row:
            row["pci.bus_id"] = kernel_bus_id(row["pci.bus_id"])
        rows.append(row)
    return rows


def kernel_bus_id(bus_id: str) -> str:
    """nvidia-smi's "00000000:18:00.0" as the kernel writes it: "0000:18:00.0"."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"
