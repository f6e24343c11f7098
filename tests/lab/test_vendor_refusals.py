"""The lab's vendor flavours refuse boot, virtual-media, BIOS, ETag and update writes as the real
BMCs do, and take the form each vendor accepts (issue 29).

Raw HTTP against one lab BMC per test, its clock stopped; each exchange is the refusal (status and
MessageId, as the vendor words it) and then the accepted form. The client that sends the accepted
forms is tested elsewhere; these describe the lab only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import httpx
import pytest
from sushy.oem.dell.resources.manager.manager import DellManagerExtension

from lab.hall import LabBmc, LabHall
from lab.node import NOTHING_TO_BOOT

CAPTURES = Path(__file__).resolve().parents[1] / "redfish" / "captures"
BOOT = 60  # lab seconds: any lab reset has finished
ONCE_PXE = {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}


@contextmanager
def lab_bmc(flavour: str, *faults: str) -> Iterator[tuple[LabHall, LabBmc, httpx.Client, list]]:
    """One BMC of `flavour`, a client asking for identity encoding, and the node's boots."""
    with LabHall(1, flavours=(flavour,), speed=0, seed=29, faults={0: list(faults)}) as hall:
        bmc = hall.bmc(0)
        booted: list[str] = []
        bmc.node.on_boot.append(lambda node, target: booted.append(target))
        with httpx.Client(
            base_url=bmc.http_url,
            auth=(bmc.node.username, bmc.node.password),
            headers={"Accept-Encoding": "identity"},
            timeout=5.0,
        ) as http:
            yield hall, bmc, http, booted


def message_ids(answer: httpx.Response) -> list[str]:
    return [m["MessageId"] for m in answer.json()["error"]["@Message.ExtendedInfo"]]


def power_on(hall: LabHall, http: httpx.Client, system: str) -> None:
    answer = http.post(
        f"{system.rstrip('/')}/Actions/ComputerSystem.Reset", json={"ResetType": "On"}
    )
    assert answer.status_code == 204


# -- Dell iDRAC 9 -----------------------------------------------------------------------------

DELL_SYSTEM = "/redfish/v1/Systems/System.Embedded.1"
DELL_SCP = (
    "/redfish/v1/Managers/iDRAC.Embedded.1/Actions/Oem/EID_674_Manager.ImportSystemConfiguration"
)
DELL_CD = f"{DELL_SYSTEM}/VirtualMedia/1"
BIOS_JOB = {
    "Attributes": {"SriovGlobalEnable": "Enabled"},
    "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"},
}


def sushy_vcd_dvd_import() -> dict:
    """The body sushy's Dell OEM set_virtual_boot_device posts (one-time boot to VCD-DVD)."""
    buffer = DellManagerExtension.IDRAC_CONFIG_CD % ("iDRAC.Embedded.1", "Enabled")
    return dict(DellManagerExtension.ACTION_DATA, ImportBuffer=buffer)


def test_dell_boot_mode_is_refused_while_a_bios_job_is_pending():
    with lab_bmc("dell") as (hall, bmc, http, booted):
        assert http.patch(f"{DELL_SYSTEM}/Bios/Settings", json=BIOS_JOB).status_code == 202
        with_mode = {**ONCE_PXE, "BootSourceOverrideMode": "UEFI"}
        refused = http.patch(DELL_SYSTEM, json={"Boot": with_mode})
        assert refused.status_code == 400
        assert message_ids(refused) == ["IDRAC.2.8.SYS011"]
        assert "already committed" in refused.json()["error"]["message"]
        # Accepted: the override without BootSourceOverrideMode.
        assert http.patch(DELL_SYSTEM, json={"Boot": ONCE_PXE}).status_code == 204
        assert http.get(DELL_SYSTEM).json()["Boot"]["BootSourceOverrideTarget"] == "Pxe"


def test_dell_bios_settings_are_refused_while_a_job_is_scheduled():
    with lab_bmc("dell") as (hall, bmc, http, booted):
        settings = f"{DELL_SYSTEM}/Bios/Settings"
        assert http.patch(settings, json=BIOS_JOB).status_code == 202
        another_job = {**BIOS_JOB, "Attributes": {"ProcVirtualization": "Enabled"}}
        refused = http.patch(settings, json=another_job)
        assert (refused.status_code, message_ids(refused)) == (400, ["IDRAC.2.8.RAC0679"])
        pending = http.patch(settings, json={"Attributes": {"ProcVirtualization": "Enabled"}})
        assert (pending.status_code, message_ids(pending)) == (400, ["IDRAC.2.8.SYS011"])
        # Accepted once the reset has run the job.
        power_on(hall, http, DELL_SYSTEM)
        hall.advance(BOOT)
        assert http.patch(settings, json=another_job).status_code == 202


def test_dell_virtual_cd_sits_under_the_system_and_boots_by_the_oem_vcd_dvd_import():
    with lab_bmc("dell", "idrac_before_6") as (hall, bmc, http, booted):
        system = http.get(DELL_SYSTEM).json()
        assert system["VirtualMedia"] == {"@odata.id": f"{DELL_SYSTEM}/VirtualMedia"}
        insert = http.post(
            f"{DELL_CD}/Actions/VirtualMedia.InsertMedia",
            json={"Image": "https://media.test/boot.iso", "Inserted": True},
        )
        assert insert.status_code == 204
        assert http.get(DELL_CD).json()["Inserted"] is True
        # iDRAC before 6.0: a Cd override boots the (empty) physical drive.
        assert (
            http.patch(
                DELL_SYSTEM, json={"Boot": {**ONCE_PXE, "BootSourceOverrideTarget": "Cd"}}
            ).status_code
            == 204
        )
        power_on(hall, http, DELL_SYSTEM)
        hall.advance(BOOT)
        assert (booted, bmc.node.last_boot_target) == ([], NOTHING_TO_BOOT)
        # Accepted: the OEM one-time boot to VCD-DVD, as sushy sends it; then a restart.
        imported = http.post(DELL_SCP, json=sushy_vcd_dvd_import())
        assert imported.status_code == 202 and "/JID_" in imported.headers["Location"]
        reset = {"ResetType": "ForceRestart"}
        assert (
            http.post(f"{DELL_SYSTEM}/Actions/ComputerSystem.Reset", json=reset).status_code == 204
        )
        hall.advance(BOOT)
        assert booted == ["Cd"]


def test_dell_6_boots_the_virtual_cd_on_a_cd_override():
    with lab_bmc("dell") as (hall, bmc, http, booted):
        image = {"Image": "https://media.test/boot.iso"}
        assert (
            http.post(f"{DELL_CD}/Actions/VirtualMedia.InsertMedia", json=image).status_code == 204
        )
        cd_once = {**ONCE_PXE, "BootSourceOverrideTarget": "Cd"}
        assert http.patch(DELL_SYSTEM, json={"Boot": cd_once}).status_code == 204
        power_on(hall, http, DELL_SYSTEM)
        hall.advance(BOOT)
        assert booted == ["Cd"]


def test_dell_scp_import_is_refused_with_lc068_while_a_bios_job_is_pending():
    with lab_bmc("dell") as (hall, bmc, http, booted):
        assert http.patch(f"{DELL_SYSTEM}/Bios/Settings", json=BIOS_JOB).status_code == 202
        refused = http.post(DELL_SCP, json=sushy_vcd_dvd_import())
        assert (refused.status_code, message_ids(refused)) == (400, ["IDRAC.2.8.LC068"])
        recorded = sushy_sample("oem/dell/unit/json_samples/error_pending_job.json")
        assert refused.json()["error"]["message"] == recorded["error"]["message"]


# -- HPE iLO 5 --------------------------------------------------------------------------------

HPE_SYSTEM = "/redfish/v1/Systems/1/"


def test_hpe_boot_patch_is_refused_during_post_then_accepted():
    with lab_bmc("hpe") as (hall, bmc, http, booted):
        power_on(hall, http, HPE_SYSTEM)
        refused = http.patch(HPE_SYSTEM, json={"Boot": ONCE_PXE})
        assert refused.status_code == 400
        assert message_ids(refused) == ["iLO.2.18.UnableToModifyDuringSystemPOST"]
        hall.advance(11)  # POST is over
        assert http.patch(HPE_SYSTEM, json={"Boot": ONCE_PXE}).status_code == 204


def test_hpe_serves_strong_etags_and_refuses_a_weak_one_in_if_match():
    with lab_bmc("hpe") as (hall, bmc, http, booted):
        settings = "/redfish/v1/systems/1/bios/settings/"
        change = {"Attributes": {"PcieAspm": "Disabled"}}
        weak = http.get(settings, headers={"Accept-Encoding": "gzip"}).headers["ETag"]
        assert weak.startswith('W/"')
        refused = http.patch(settings, json=change, headers={"If-Match": weak})
        assert (refused.status_code, message_ids(refused)) == (
            412,
            ["Base.1.12.PreconditionFailed"],
        )
        strong = http.get(settings).headers["ETag"]
        assert strong == weak[2:]
        accepted = http.patch(settings, json=change, headers={"If-Match": strong})
        assert accepted.status_code == 200


@pytest.mark.parametrize(
    ("flavour", "system", "settings", "attribute"),
    [
        ("dell", DELL_SYSTEM, f"{DELL_SYSTEM}/Bios/Settings", "HttpDev1Uri"),
        ("hpe", HPE_SYSTEM, "/redfish/v1/systems/1/bios/settings/", "UrlBootFile"),
    ],
)
def test_http_boot_uri_is_a_bios_attribute_on_dell_and_hpe(flavour, system, settings, attribute):
    with lab_bmc(flavour) as (hall, bmc, http, booted):
        uri = "https://boot.test/node.efi"
        http_boot = {**ONCE_PXE, "BootSourceOverrideTarget": "UefiHttp", "HttpBootUri": uri}
        refused = http.patch(system, json={"Boot": http_boot})
        assert (refused.status_code, message_ids(refused)) == (400, ["Base.1.12.PropertyUnknown"])
        etag = http.get(settings).headers["ETag"]
        staged = http.patch(
            settings, json={"Attributes": {attribute: uri}}, headers={"If-Match": etag}
        )
        assert staged.status_code in (200, 202)
        assert http.get(settings).json()["Attributes"][attribute] == uri


# -- Lenovo XCC -------------------------------------------------------------------------------

LENOVO_SYSTEM = "/redfish/v1/Systems/1"
LENOVO_CD = f"{LENOVO_SYSTEM}/VirtualMedia/EXT1"


def test_lenovo_patches_need_a_strong_if_match_and_media_is_patched_in():
    with lab_bmc("lenovo") as (hall, bmc, http, booted):
        system = http.get(LENOVO_SYSTEM).json()
        assert system["VirtualMedia"] == {"@odata.id": f"{LENOVO_SYSTEM}/VirtualMedia"}
        assert http.get("/redfish/v1/Managers/1").status_code == 200
        cd = http.get(LENOVO_CD)
        assert "Actions" not in cd.json() and not cd.headers["ETag"].startswith("W/")
        no_action = http.post(f"{LENOVO_CD}/Actions/VirtualMedia.InsertMedia", json={"Image": "x"})
        assert no_action.status_code == 404
        medium = {"Image": "https://media.test/boot.iso", "Inserted": True}
        missing = http.patch(LENOVO_CD, json=medium)
        assert (missing.status_code, message_ids(missing)) == (
            428,
            ["Base.1.12.PreconditionRequired"],
        )
        weak = http.patch(LENOVO_CD, json=medium, headers={"If-Match": "W/" + cd.headers["ETag"]})
        assert weak.status_code == 412
        assert (
            http.patch(LENOVO_CD, json=medium, headers={"If-Match": cd.headers["ETag"]}).status_code
            == 204
        )
        assert http.get(LENOVO_CD).json()["Inserted"] is True
        # The boot override on the system needs If-Match too.
        assert http.patch(LENOVO_SYSTEM, json={"Boot": ONCE_PXE}).status_code == 428
        etag = http.get(LENOVO_SYSTEM).headers["ETag"]
        assert (
            http.patch(
                LENOVO_SYSTEM, json={"Boot": ONCE_PXE}, headers={"If-Match": etag}
            ).status_code
            == 204
        )


# -- AMI MegaRAC ------------------------------------------------------------------------------

AMI_CD = "/redfish/v1/Managers/Self/VirtualMedia/CD1"


def test_ami_insert_media_needs_transfer_protocol_type():
    with lab_bmc("ami") as (hall, bmc, http, booted):
        manager = http.get("/redfish/v1/Managers/Self").json()
        assert manager["VirtualMedia"] == {"@odata.id": "/redfish/v1/Managers/Self/VirtualMedia"}
        assert "MediaTypes" not in http.get(AMI_CD).json()
        action = f"{AMI_CD}/Actions/VirtualMedia.InsertMedia"
        refused = http.post(action, json={"Image": "https://media.test/boot.iso"})
        assert (refused.status_code, message_ids(refused)) == (
            400,
            ["Base.1.12.ActionParameterMissing"],
        )
        info = refused.json()["error"]["@Message.ExtendedInfo"][0]
        recorded = sushy_sample("unit/json_samples/transfer_proto_required_error.json")
        assert info["RelatedProperties"] == ["#/TransferProtocolType"]
        assert info["Message"] == recorded["error"]["message"]
        medium = {"Image": "https://media.test/boot.iso", "TransferProtocolType": "HTTPS"}
        assert http.post(action, json=medium).status_code == 204


@pytest.mark.parametrize("flavour", ["ami", "dgx"])
def test_simple_update_needs_transfer_protocol(flavour):
    with lab_bmc(flavour) as (hall, bmc, http, booted):
        action = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
        image = {"ImageURI": "http://files.test/bmc-99.1.bin"}
        refused = http.post(action, json=image)
        assert (refused.status_code, message_ids(refused)) == (
            400,
            ["Base.1.12.ActionParameterMissing"],
        )
        assert (
            refused.json()["error"]["@Message.ExtendedInfo"][0]["MessageArgs"][1]
            == "TransferProtocol"
        )
        assert http.post(action, json={**image, "TransferProtocol": "HTTP"}).status_code == 202


# -- NVIDIA DGX H100 and GB200 ----------------------------------------------------------------


def test_dgx_insert_media_needs_credentials_an_https_image_and_mounts_late():
    with lab_bmc("dgx") as (hall, bmc, http, booted):
        cd = "/redfish/v1/Managers/BMC/VirtualMedia/CD1"
        action = f"{cd}/Actions/VirtualMedia.InsertMedia"
        refused = http.post(action, json={"Image": "https://media.test/boot.iso"})
        recorded = sushy_sample("unit/json_samples/credentials_required_error.json")
        assert refused.status_code == 400
        served = refused.json()["error"]["@Message.ExtendedInfo"]
        assert [m["Message"] for m in served] == [
            m["Message"] for m in recorded["error"]["@Message.ExtendedInfo"]
        ]
        assert [m["MessageArgs"][1] for m in refused.json()["error"]["@Message.ExtendedInfo"]] == [
            "UserName",
            "Password",
        ]
        dummy = {"UserName": "none", "Password": "none"}
        plain = http.post(action, json={"Image": "http://media.test/boot.iso", **dummy})
        assert message_ids(plain) == ["Base.1.12.ResourceAtUriInUnknownFormat"]
        assert (
            http.post(action, json={"Image": "https://media.test/boot.iso", **dummy}).status_code
            == 204
        )
        assert http.get(cd).json()["Inserted"] is False  # mounting
        hall.advance(2)
        assert http.get(cd).json()["Inserted"] is True


@pytest.mark.parametrize(
    ("flavour", "system", "settings"),
    [
        ("dgx", "/redfish/v1/Systems/DGX", "/redfish/v1/Systems/DGX/SD"),
        ("gb200", "/redfish/v1/Systems/System_0", "/redfish/v1/Systems/System_0/Settings"),
    ],
)
def test_nvidia_boot_override_is_taken_on_the_settings_object(flavour, system, settings):
    with lab_bmc(flavour) as (hall, bmc, http, booted):
        body = http.get(system).json()
        assert body["@Redfish.Settings"]["SettingsObject"] == {"@odata.id": settings}
        refused = http.patch(system, json={"Boot": ONCE_PXE})
        assert (refused.status_code, message_ids(refused)) == (
            400,
            ["Base.1.12.PropertyNotWritable"],
        )
        assert http.patch(settings, json={"Boot": ONCE_PXE}).status_code == 204
        read_back = http.get(settings).json()["Boot"]
        assert (read_back["BootSourceOverrideTarget"], read_back["BootSourceOverrideEnabled"]) == (
            "Pxe",
            "Once",
        )
        power_on(hall, http, system)
        hall.advance(BOOT)
        assert booted == ["Pxe"]


def test_gb200_mounts_only_https_or_smb_images():
    with lab_bmc("gb200") as (hall, bmc, http, booted):
        cd = "/redfish/v1/Managers/BMC_0/VirtualMedia/USB1"
        assert http.get(cd).json()["MediaTypes"] == ["CD", "USBStick"]
        action = f"{cd}/Actions/VirtualMedia.InsertMedia"
        refused = http.post(action, json={"Image": "http://media.test/boot.iso"})
        assert message_ids(refused) == ["Base.1.12.ResourceAtUriInUnknownFormat"]
        assert http.post(action, json={"Image": "smb://media.test/boot.iso"}).status_code == 204
        assert http.get(cd).json()["Inserted"] is False
        hall.advance(2)
        assert http.get(cd).json()["Inserted"] is True


# -- Supermicro X11/X12 behaviour --------------------------------------------------------------


def test_supermicro_refuses_inserted_and_boots_the_medium_only_as_usbcd():
    with lab_bmc("supermicro") as (hall, bmc, http, booted):
        system = "/redfish/v1/Systems/1"
        action = (
            "/redfish/v1/Managers/1/VirtualMedia/VirtualMedia1/Actions/VirtualMedia.InsertMedia"
        )
        medium = {"Image": "https://media.test/boot.iso"}
        refused = http.post(action, json={**medium, "Inserted": True, "WriteProtected": True})
        assert (refused.status_code, message_ids(refused)) == (
            400,
            ["Base.1.12.ActionParameterNotSupported"],
        )
        assert http.post(action, json=medium).status_code == 204
        cd_once = {**ONCE_PXE, "BootSourceOverrideTarget": "Cd"}
        assert http.patch(system, json={"Boot": cd_once}).status_code == 204
        power_on(hall, http, system)
        hall.advance(BOOT)
        assert (booted, bmc.node.last_boot_target) == ([], NOTHING_TO_BOOT)
        usb_cd = {**ONCE_PXE, "BootSourceOverrideTarget": "UsbCd"}
        assert http.patch(system, json={"Boot": usb_cd}).status_code == 204
        reset = {"ResetType": "ForceRestart"}
        assert http.post(f"{system}/Actions/ComputerSystem.Reset", json=reset).status_code == 204
        hall.advance(BOOT)
        assert booted == ["Cd"]


# -- AllowableValues as each capture lists them -------------------------------------------------

BOOT_LISTS = {
    "dell": ("dell-idrac9-r750", DELL_SYSTEM, "Systems/System.Embedded.1"),
    "hpe": ("hpe-ilo5-apollo6500-xl675d-a100", HPE_SYSTEM, "Systems/1"),
    "supermicro": ("supermicro-hgx-sys821ge", "/redfish/v1/Systems/1", "Systems/1"),
    "dgx": ("nvidia-dgx-h100", "/redfish/v1/Systems/DGX/SD", "Systems/DGX/SD"),
    "gb200": ("nvidia-gb200", "/redfish/v1/Systems/System_0", "Systems/System_0"),
    "lenovo": ("lenovo-xcc-sr670v2", LENOVO_SYSTEM, "Systems/1"),
    "ami": ("ami-megarac-gigabyte", "/redfish/v1/Systems/Self", "Systems/Self"),
}


@pytest.mark.parametrize("flavour", BOOT_LISTS)
def test_boot_targets_are_listed_as_the_capture_lists_them(flavour):
    capture, path, captured = BOOT_LISTS[flavour]
    key = "BootSourceOverrideTarget@Redfish.AllowableValues"
    wanted = json.loads((CAPTURES / capture / captured / "index.json").read_text())["Boot"][key]
    with lab_bmc(flavour) as (hall, bmc, http, booted):
        assert http.get(path).json()["Boot"][key] == wanted


def sushy_sample(name: str) -> dict:
    """One of sushy 5.14.0's recorded vendor answers."""
    return json.loads(resources.files("sushy.tests").joinpath(name).read_text())
