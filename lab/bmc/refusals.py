"""What each lab flavour refuses of a boot, virtual-media, BIOS or update write, as its vendor does.

Each check returns the answer the vendor's BMC gives (status and Redfish error body) or None when
the write may go ahead. The bodies copy the recorded ones where a recording exists (sushy 5.14.0's
tests/unit/json_samples and tests/oem/dell/unit/json_samples); the lab's generic flavour values
refuse nothing here.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..node import LabNode
from .flavours import Flavour

# Dell iDRAC 9's own registry prefix as its answers carry it (sushy's error_pending_job.json).
IDRAC = "IDRAC.2.8"
# HPE iLO 5's registry as iLO 5 2.x names it (iLO 5 message registry iLO.2.18).
ILO = "iLO.2.18"
BASE = "Base.1.12"


def error(status: int, message_id: str, message: str, **extra: Any) -> web.Response:
    """A Redfish error answer with one extended message."""
    info = {"MessageId": message_id, "Message": message, **extra}
    body = {"error": {"code": message_id, "message": message, "@Message.ExtendedInfo": [info]}}
    return web.json_response(body, status=status)


def dell_error(code: str, message: str, resolution: str) -> web.Response:
    """An iDRAC job-queue refusal, shaped as sushy's recorded error_pending_job.json."""
    return error(
        400,
        f"{IDRAC}.{code}",
        message,
        MessageArgs=[],
        **{"MessageArgs@odata.count": 0},
        RelatedProperties=[],
        **{"RelatedProperties@odata.count": 0},
        Resolution=resolution,
        Severity="Warning",
    )


def pending_values_committed() -> web.Response:
    """iDRAC: a configuration job is scheduled, so no other pending value may be set.

    Dell's iDRAC-Redfish-Scripting issue 249 (a job created, further pending values refused
    until it runs or is deleted) and quadsproject/quads issue 726 (the 400 answer's words).
    """
    return dell_error(
        "SYS011",
        "Pending configuration values are already committed, unable to perform another set "
        "operation.",
        "Run the scheduled configuration job or delete it, then retry the operation.",
    )


def import_refused_while_pending() -> web.Response:
    """iDRAC LC068, word for word as sushy's tests/oem/dell/unit/json_samples/
    error_pending_job.json (and dell/iDRAC-Redfish-Scripting issue 116, the VCD-DVD import)."""
    return dell_error(
        "LC068",
        "Unable to perform the import or export operation because there are pending attribute "
        "changes or a configuration job is in progress.",
        "Apply or cancel any pending attribute changes. Changes can be applied by creating a "
        "targeted configuration job, or the changes can be cancelled by invoking the "
        "DeletePendingConfiguration method. If a configuration job is in progress, wait until it "
        "is completed before retrying the import or export system configuration operation.",
    )


def job_already_running() -> web.Response:
    """iDRAC RAC0679, as sushy's tests/oem/dell/unit/json_samples/error_running_job.json."""
    return dell_error(
        "RAC0679",
        "A job operation is already running. Retry the operation after the existing job is "
        "completed.",
        "Wait until the running job is completed or delete the scheduled job and retry the "
        "operation",
    )


def parameter_missing(action: str, names: list[str]) -> web.Response:
    """Base ActionParameterMissing, one message per missing parameter, as sushy's
    credentials_required_error.json and transfer_proto_required_error.json record it."""
    messages = [
        {
            "MessageId": f"{BASE}.ActionParameterMissing",
            "Message": f"The action {action} requires the parameter {name} to be present in "
            "the request body.",
            "MessageArgs": [action, name],
            "RelatedProperties": [f"#/{name}"],
            "Resolution": "Supply the action with the required parameter in the request body "
            "when the request is resubmitted.",
            "Severity": "Critical",
        }
        for name in names
    ]
    body = {
        "error": {
            "code": f"{BASE}.ActionParameterMissing",
            "message": messages[0]["Message"],
            "@Message.ExtendedInfo": messages,
        }
    }
    return web.json_response(body, status=400)


def missing_parameters(required: tuple[str, ...], body: dict[str, Any], action: str):
    """The ActionParameterMissing answer when `body` lacks any of `required`, else None."""
    missing = [name for name in required if body.get(name) in (None, "")]
    return parameter_missing(action, missing) if missing else None


def insert_media(flavour: Flavour, body: dict[str, Any], action: str) -> web.Response | None:
    """What the flavour refuses of an InsertMedia body."""
    missing = missing_parameters(flavour.media_required, body, action)
    if missing:
        return missing
    refused = [name for name in flavour.media_refused if name in body]
    if refused:
        # Supermicro X11/X12: "Inserted"/"WriteProtected" are not parameters of its action
        # (sushy resources/manager/virtual_media.py retries without them on this 400).
        return error(
            400,
            f"{BASE}.ActionParameterNotSupported",
            f"The parameter {refused[0]} for the action InsertMedia is not supported on the "
            "target resource.",
            MessageArgs=[refused[0], "InsertMedia"],
        )
    image = str(body.get("Image") or "")
    scheme = image.partition("://")[0].lower()
    if flavour.media_schemes and scheme not in flavour.media_schemes:
        # OpenBMC bmcweb: "ImageUrl must contain specified protocol type from list: (smb, https)"
        # (redfish-core/lib/virtual_media.hpp), answered as ResourceAtUriInUnknownFormat.
        return error(
            400,
            f"{BASE}.ResourceAtUriInUnknownFormat",
            f"The resource at {image} is in a format not recognized by the service.",
            MessageArgs=[image],
        )
    return None


def boot_patch(flavour: Flavour, node: LabNode, boot: dict[str, Any], now: float):
    """What the flavour refuses of a Boot PATCH (on the system or its settings object)."""
    if flavour.post_seconds and node.in_post(now, flavour.post_seconds):
        # iLO 5/6 while the host is in POST (iLO message registry; Ironic's redfish
        # management.py and libredfish's hpe.rs both retry or ignore exactly this).
        return error(
            400,
            f"{ILO}.UnableToModifyDuringSystemPOST",
            "The value for property Boot cannot be changed while the computer system BIOS is "
            "in POST.",
            MessageArgs=["Boot"],
            Resolution="After the computer system is either fully booted or powered off, "
            "retry the operation.",
        )
    if flavour.bios_job and "BootSourceOverrideMode" in boot and node.bios_job:
        # iDRAC turns BootSourceOverrideMode into a BIOS BootMode change, which needs a
        # configuration job of its own: refused while one is scheduled.
        return pending_values_committed()
    if flavour.http_boot_attribute and "HttpBootUri" in boot:
        # iDRAC and iLO 6 have no Boot.HttpBootUri: the URI is a BIOS attribute.
        return error(
            400,
            f"{BASE}.PropertyUnknown",
            "The property HttpBootUri is not in the list of valid properties for the resource. "
            f"Set the BIOS attribute {flavour.http_boot_attribute} instead.",
            MessageArgs=["HttpBootUri"],
            RelatedProperties=["#/Boot/HttpBootUri"],
        )
    return None


def boot_on_settings_only(settings_path: str) -> web.Response:
    """NVIDIA DGX H100 / GB200: Boot is taken on the system's settings object only."""
    return error(
        400,
        f"{BASE}.PropertyNotWritable",
        "The property Boot is a read only property and cannot be assigned a value; PATCH "
        f"{settings_path} instead.",
        MessageArgs=["Boot"],
        RelatedProperties=["#/Boot"],
    )


def bios_patch(flavour: Flavour, node: LabNode, body: dict[str, Any]) -> web.Response | None:
    """iDRAC: no BIOS change while a configuration job is scheduled."""
    if not (flavour.bios_job and node.bios_job):
        return None
    if (body.get("@Redfish.SettingsApplyTime") or {}).get("ApplyTime"):
        return job_already_running()  # a second job asked for while one waits
    return pending_values_committed()


def if_match(flavour: Flavour, wanted: str | None, current: str, required: bool):
    """The If-Match rules: 428 without one where every PATCH needs it, 412 on a weak or stale
    ETag where the flavour says so; the generic BMC compares weakly and lets a missing one by."""
    if wanted is None:
        if flavour.if_match_always:
            # Lenovo XCC: 428 to a PATCH without If-Match (ansible/ansible issue 56050 and
            # pull request 56150, Lenovo ThinkSystem).
            return error(
                428,
                f"{BASE}.PreconditionRequired",
                "A precondition header or annotation is required to change a resource.",
                Resolution="Try the request again with an If-Match header.",
            )
        if not required:
            return None
    elif wanted.startswith("W/") and flavour.weak_etag_refused:
        # iLO, XCC and AMI MegaRAC match only the strong form (sushy connector.py retries a
        # weak one strong; ansible community.general issue 11261 for XCC's words, pull
        # request 6434 for a Gigabyte MegaRAC refusing W/).
        return error(
            412,
            f"{BASE}.PreconditionFailed",
            "The ETag supplied did not match the ETag required to change this resource.",
            Resolution="Try the operation again using the appropriate strong ETag.",
        )
    if wanted is None or strong(wanted) != strong(current):
        return error(
            412,
            f"{BASE}.PreconditionFailed",
            "The ETag in If-Match does not match the resource",
        )
    return None


def strong(etag: str) -> str:
    """The ETag without its weak marker."""
    return etag[2:] if etag.startswith("W/") else etag
