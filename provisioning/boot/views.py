"""What booting nodes fetch from Greenlight: per-node iPXE scripts and per-node ISOs.

Both carry the node's boot credential, so each is found only by what that node's own boot
presents (its MAC to iPXE, its medium's unguessable key to the BMC) and only while the node's
run is active; the iPXE script only while the boot Greenlight ordered awaits it (ipxe_guard
counts and throttles the misses).
"""

from __future__ import annotations

from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.events import truncate

from . import images as boot_images
from . import ipxe_guard, node_media
from .credentials import by_media_key, ephemeral_for_mac, kernel_args

IPXE_MISSING = "#!ipxe\necho Greenlight has no boot for this machine now\nexit 1\n"


def ipxe_script_text(manifest: dict, args: str) -> str:
    """The iPXE script that boots the ephemeral kernel with the node's arguments."""
    media = manifest["ephemeral"]
    kernel, initrd = media["kernel"], media["initrd"]
    return (
        "#!ipxe\n"
        f"kernel {kernel['url']} initrd=initrd.img {args} console=ttyS0\n"
        f"initrd --name initrd.img {initrd['url']}\n"
        "boot\n"
    )


@require_GET
def ipxe_script(request: HttpRequest) -> HttpResponse:
    """The armed node's iPXE script for its own MAC; one answer, the same, for everyone else."""
    source = request.META.get("REMOTE_ADDR", "")
    if ipxe_guard.throttled(source):
        response = HttpResponse(IPXE_MISSING, status=429, content_type="text/plain")
        response["Retry-After"] = str(ipxe_guard.WINDOW_S)
        return response
    mac = request.GET.get("mac", "")
    credential = ephemeral_for_mac(mac)
    if credential is None or credential.run is None:
        ipxe_guard.miss(source, f"no armed boot for MAC {truncate(mac, 40)!r}")
        return HttpResponse(IPXE_MISSING, status=404, content_type="text/plain")
    media = credential.run.manifest.spec.get("ephemeral") or {}
    if not (media.get("kernel") and media.get("initrd")):
        # Said to the operator on the node, not to whoever asked: the answer stays the miss.
        record_event(
            credential.node,
            EventKind.BOOT_REFUSED,
            actor_label="boot",
            message="iPXE boot asked for, but the manifest names no ephemeral kernel and initrd",
            data={"run": credential.run_id},
        )
        return HttpResponse(IPXE_MISSING, status=404, content_type="text/plain")
    script = ipxe_script_text(credential.run.manifest.spec, kernel_args(credential))
    response = HttpResponse(script, content_type="text/plain")
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def node_iso(request: HttpRequest, media_key: str) -> HttpResponse:
    credential = by_media_key(media_key)
    if credential is None:
        return HttpResponse(
            "no boot medium by that name now\n", status=404, content_type="text/plain"
        )
    try:
        path = node_media.node_iso(credential)
    except node_media.MediumUnavailable as exc:
        return HttpResponse(f"{exc}\n", status=409, content_type="text/plain")
    response = FileResponse(path.open("rb"), content_type="application/octet-stream")
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def boot_image(request: HttpRequest, name: str) -> HttpResponse:
    """A file of the built boot images (GREENLIGHT_BOOT_IMAGE_DIR), with its sha256 in a header."""
    try:
        path, sha256 = boot_images.image_file(name)
    except boot_images.NoSuchImage as exc:
        return HttpResponse(f"{exc}\n", status=404, content_type="text/plain")
    response = FileResponse(path.open("rb"), content_type="application/octet-stream")
    response["X-Checksum-Sha256"] = sha256
    return response


@require_GET
def boot_image_index(request: HttpRequest) -> JsonResponse:
    """Every built boot image file with its sha256: what a manifest's ephemeral section names."""
    return JsonResponse({"images": boot_images.index()})
