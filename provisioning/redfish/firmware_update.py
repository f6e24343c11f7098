"""Starting a firmware update the way the BMC takes it: SimpleUpdate or multipart push.

SimpleUpdate's body follows what the BMC declares (SimpleUpdateActionInfo and the inline
AllowableValues: TransferProtocol, Targets); multipart push's UpdateParameters follow the
vendor (quirks.QUIRK_TABLE), since no BMC declares them. A SimpleUpdate the BMC refuses falls
back to multipart push where it offers one; an image larger than MaxImageSizeBytes is refused
before a byte is sent. A rack device's push is made to run at once (push_immediately).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

from . import action_info, errors
from .models import Staged

if TYPE_CHECKING:
    from .client import RedfishClient

# An image upload runs at a BMC's pace: hundreds of MB over its management link take minutes,
# far past the 10 s a Redfish read is given.
UPLOAD_TIMEOUT_S = 900.0
SIMPLE_UPDATE = "#UpdateService.SimpleUpdate"

ImageOpener = Callable[[], AbstractContextManager[BinaryIO]]

# Supermicro's preserve flags (NVIDIA/libredfish src/supermicro.rs): without them a BMC update
# resets its configuration, SDR and certificate, and a BIOS update its NVRAM and SMBIOS.
SUPERMICRO_PRESERVE = {
    "bmc": {"BMC": {"PreserveCfg": True, "PreserveSdr": True, "PreserveSsl": True,
                    "BackupBMC": True}},
    "bios": {"BIOS": {"PreserveME": True, "PreserveNVRAM": True, "PreserveSMBIOS": True,
                      "BackupBIOS": False}},
}  # fmt: skip


def start(
    client: RedfishClient,
    *,
    image_uri: str | None = None,
    image: bytes | BinaryIO | None = None,
    open_image: ImageOpener | None = None,
    filename: str = "firmware.bin",
    targets: list[str] | None = None,
    kind: str = "",
) -> Staged:
    """Start an update: SimpleUpdate from `image_uri` where offered, else (or when the BMC
    refuses it) a multipart push of `image` or of what `open_image` opens."""
    path = client.link(client.root(), "UpdateService", url="/redfish/v1/")
    service = client.get(path)
    simple = (service.get("Actions") or {}).get(SIMPLE_UPDATE)
    multipart = service.get("MultipartHttpPushUri")
    can_push = bool(multipart) and (image is not None or open_image is not None)
    if image_uri and isinstance(simple, dict) and simple.get("target"):
        declared = action_info.declared(client, simple, path)
        body = simple_update_body(declared, image_uri, targets or [], client.vendor())
        body.update(apply_on_reset(simple))
        try:
            return _staged("firmware:simple_update", post_simple_update(client, declared, body))
        except errors.RequestRejected:
            if not can_push:
                raise
            # Refused as sent: the BMC that offers multipart push takes the bytes instead.
    if can_push:
        opened: AbstractContextManager[Any] = (
            nullcontext(image) if image is not None else open_image()  # type: ignore[misc]
        )
        with opened as stream:
            check_size(client, path, service, stream)
            parameters = multipart_parameters(client, kind, targets or [])
            files = {
                "UpdateParameters": (None, json.dumps(parameters), "application/json"),
                # Dell reads the package's type from its base name (libredfish src/network.rs).
                "UpdateFile": (os.path.basename(filename), stream, "application/octet-stream"),
            }
            answer = client.transport.request(
                "POST", str(multipart), files=files, timeout=UPLOAD_TIMEOUT_S
            )
        return _staged("firmware:multipart_push", answer)
    offered = [n for n, p in (("SimpleUpdate", simple), ("multipart push", multipart)) if p]
    wanted = "an image URI" if image_uri else "an image file"
    raise errors.ActionNotSupported(
        client.transport.absolute(path),
        f"cannot update from {wanted}: this BMC offers {', '.join(offered) or 'neither'}"
        " of SimpleUpdate and multipart push",
    )


def simple_update_body(
    declared: action_info.Declared, image_uri: str, targets: list[str], vendor: str
) -> dict[str, Any]:
    """SimpleUpdate's body: ImageURI, TransferProtocol where declared, Targets where allowed.

    TransferProtocol goes wherever the BMC names it (DGX H100, AMI and the Cray EX235n require
    it). Targets only where the BMC declares them and only those it allows (Lenovo XCC allows
    BMC-Backup alone); Dell takes none at all (quirk row dell / SimpleUpdate).
    """
    body: dict[str, Any] = {"ImageURI": image_uri}
    protocol = urlsplit(image_uri).scheme.upper()
    protocols = declared.allowable("TransferProtocol")
    if protocols is not None and protocol not in protocols:
        raise errors.ActionNotSupported(
            declared.target,
            f"this BMC fetches images over {', '.join(protocols)} only, not {protocol}",
        )
    if declared.declares("TransferProtocol"):
        body["TransferProtocol"] = protocol
    if vendor != "dell" and declared.declares("Targets") and declared.takes("Targets"):
        allowed = [t for t in targets if declared.allows("Targets", t)]
        if allowed:
            body["Targets"] = allowed
    return body


def apply_on_reset(action: dict[str, Any]) -> dict[str, Any]:
    """`@Redfish.OperationApplyTime: OnReset` where the action declares it supported: the host
    reset that activates a BIOS or NIC package is Greenlight's to make (it waits for the agent
    after it), never one the BMC makes on its own ("Immediate" reboots a Dell host at once)."""
    support = action.get("@Redfish.OperationApplyTimeSupport") or {}
    values = support.get("SupportedValues") if isinstance(support, dict) else None
    if isinstance(values, list) and "OnReset" in values:
        return {"@Redfish.OperationApplyTime": "OnReset"}
    return {}


def post_simple_update(
    client: RedfishClient, declared: action_info.Declared, body: dict[str, Any]
) -> Any:
    """POST SimpleUpdate; a refusal that names TransferProtocol as missing is retried with it
    (a BMC that requires it without declaring it: sushy transfer_proto_required_error)."""
    try:
        return client.transport.request("POST", declared.target, json=body)
    except errors.RequestRejected as exc:
        words = " ".join([exc.reason, *(a for m in exc.messages for a in m.args)])
        if "TransferProtocol" in body or "transferprotocol" not in words.lower():
            raise
        retry = {**body, "TransferProtocol": urlsplit(str(body["ImageURI"])).scheme.upper()}
        return client.transport.request("POST", declared.target, json=retry)


def push_immediately(client: RedfishClient) -> None:
    """Make a pushed image run as soon as it is written where the BMC would hold it for its
    own reset: PATCH HttpPushUriOptions.HttpPushUriApplyTime.ApplyTime (DMTF UpdateService)
    from OnReset to Immediate where Immediate is allowed, then read it back.

    For a rack device (power shelf, switch tray), whose image Greenlight makes run by no host
    reset. A Delta power shelf's PMC starts at OnReset; NVIDIA's own tools PATCH it to
    Immediate before every push (NVIDIA DGX GB200 firmware update guide, power shelf page;
    NVIDIA/bare-metal-manager-rest powershelf-manager/pkg/redfish/client.go
    SetHttpPushUriApplyTimeImmediate). Chosen over a manager reset after the push: the shelf's
    image then runs the way a device's does, its BMC restarting itself (oob.OobFirmware
    .activate), with no reset to record as sent, and the PATCH is idempotent, so a push retried
    after a crash asks again harmlessly. Servers keep their setting, which their platform's
    activation (activation.py) was written against (the GH200 and stock bmcweb captures read
    OnReset). sushy 5.14 reads no HttpPushUriOptions.
    """
    path = client.link(client.root(), "UpdateService", url="/redfish/v1/")
    service = client.get(path)
    options = service.get("HttpPushUriOptions")
    timing = options.get("HttpPushUriApplyTime") if isinstance(options, dict) else None
    if not isinstance(timing, dict) or timing.get("ApplyTime") != "OnReset":
        return
    url = client.transport.absolute(path)
    allowed = timing.get("ApplyTime@Redfish.AllowableValues")
    if isinstance(allowed, list) and "Immediate" not in allowed:
        raise errors.ConfigurationError(
            url,
            "this BMC applies a pushed image only at its next reset (HttpPushUriApplyTime "
            f"OnReset) and allows no Immediate (it allows {', '.join(map(str, allowed))})",
        )
    body = {"HttpPushUriOptions": {"HttpPushUriApplyTime": {"ApplyTime": "Immediate"}}}
    try:
        client.patch(path, body)
    except errors.RequestRejected as exc:
        raise errors.ConfigurationError(
            url,
            "the BMC refused HttpPushUriApplyTime Immediate, without which a pushed image "
            f"waits for its reset: {exc.reason}",
            status=exc.status,
            messages=exc.messages,
        ) from exc
    now = (client.get(path).get("HttpPushUriOptions") or {}).get("HttpPushUriApplyTime") or {}
    if now.get("ApplyTime") != "Immediate":
        raise errors.ConfigurationError(
            url,
            "the BMC accepted HttpPushUriApplyTime Immediate but reads back "
            f"{now.get('ApplyTime')!r}: a pushed image would wait for its reset",
        )


def multipart_parameters(client: RedfishClient, kind: str, targets: list[str]) -> dict[str, Any]:
    """UpdateParameters for a multipart push, as each vendor takes them (quirk rows)."""
    vendor = client.vendor()
    if vendor == "dell":
        # OnReset: the host reboot a BIOS or NIC package waits for is Greenlight's to make.
        return {"Targets": [], "@Redfish.OperationApplyTime": "OnReset", "Oem": {}}
    if vendor == "nvidia":
        return {"Targets": [], "ForceUpdate": True}
    if vendor == "lenovo":
        return {"Targets": [], "@Redfish.OperationApplyTime": "Immediate"}
    if vendor == "supermicro" and kind in SUPERMICRO_PRESERVE:
        target = client.manager_path() if kind == "bmc" else client.system_path() + "/Bios"
        return {
            "Targets": [target],
            "@Redfish.OperationApplyTime": "Immediate",
            "Oem": {"Supermicro": SUPERMICRO_PRESERVE[kind]},
        }
    return {"Targets": list(targets), "@Redfish.OperationApplyTime": "Immediate"}


def check_size(client: RedfishClient, path: str, service: dict[str, Any], stream: Any) -> None:
    """Refuse an image larger than the BMC's MaxImageSizeBytes before uploading it."""
    limit = service.get("MaxImageSizeBytes")
    if not isinstance(limit, int) or limit <= 0:
        return
    size = image_size(stream)
    if size is not None and size > limit:
        raise errors.ConfigurationError(
            client.transport.absolute(path),
            f"the image is {size} bytes; this BMC takes at most {limit} (MaxImageSizeBytes)",
        )


def image_size(stream: Any) -> int | None:
    """The size of bytes or a seekable file, without reading it."""
    if isinstance(stream, bytes | bytearray):
        return len(stream)
    try:
        here = stream.tell()
        stream.seek(0, os.SEEK_END)
        size = stream.tell()
        stream.seek(here)
        return int(size)
    except (AttributeError, OSError, ValueError):
        return None


def _staged(action: str, answer: Any) -> Staged:
    monitor = answer.location or (answer.body or {}).get("@odata.id")
    return Staged(
        action=action,
        url=answer.url,
        status=answer.status,
        task_monitor=monitor if answer.status in (200, 201, 202) else None,
        detail=answer.body or {},
    )
