"""Each write as the real vendor takes it: real captures served over HTTP, the vendors' recorded
refusals (sushy's json_samples) scripted as the answers, and the exact requests read back.

Each test names the defect it guards: the request today's client would have sent was refused.
"""

from __future__ import annotations

import json

import pytest

from lab.hall import LabHall
from provisioning.errors import classify
from provisioning.outcomes import TransientFailure
from provisioning.redfish import RedfishClient, errors, virtual_media
from provisioning.redfish.firmware_update import UPLOAD_TIMEOUT_S

from .conftest import lab_client
from .replay import DELL_SAMPLES, replay, sample

ISO = "https://media.example/boot/v1/media/abc.iso"
IMAGE = "https://artifacts.example/fw/bmc-9.9.9.bin"


def client_for(served) -> RedfishClient:
    return RedfishClient(
        served.url, "admin", "secret-pw", allow_plain_http=True, timeout=5.0, backoff=0.01
    )


def patches(served, path_end: str):
    return [s for s in served.writes() if s.method == "PATCH" and s.path.endswith(path_end)]


# -- boot override ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capture", "settings"),
    [
        ("nvidia-dgx-h100", "/redfish/v1/Systems/DGX/SD"),
        ("nvidia-gb200", "/redfish/v1/Systems/System_0/Settings"),
        ("nvidia-bluefield3-bmc", "/redfish/v1/Systems/Bluefield/Settings"),
    ],
)
def test_boot_override_goes_to_the_settings_object_and_is_read_back_there(capture, settings):
    with replay(capture) as served, client_for(served) as client:
        client.set_boot_override("Pxe")
        (sent,) = served.writes()
        assert (sent.method, sent.path) == ("PATCH", settings)
        assert sent.body["Boot"]["BootSourceOverrideTarget"] == "Pxe"
        assert sent.body["Boot"]["BootSourceOverrideEnabled"] == "Once"
        pending = served.body_of(settings)
        pending = {**pending, "Boot": {**pending["Boot"], "BootSourceOverrideTarget": "Pxe",
                                       "BootSourceOverrideEnabled": "Once"}}  # fmt: skip
        served.override(settings, pending)
        assert client.boot_override().target == "Pxe"


def test_boot_override_carries_the_settings_objects_strong_etag():
    with replay("nvidia-dgx-h100") as served, client_for(served) as client:
        client.set_boot_override("Hdd")
        (sent,) = served.writes()
        assert sent.headers.get("If-Match") == '"1720574208"'


def test_supermicro_boots_its_virtual_cd_as_usbcd():
    with replay("supermicro-hgx-sys821ge") as served, client_for(served) as client:
        client.set_boot_override("Cd")
        (sent,) = patches(served, "/Systems/1")
        assert sent.body["Boot"]["BootSourceOverrideTarget"] == "UsbCd"


def test_dell_boots_its_virtual_cd_through_the_oem_configuration_import():
    with replay("dell-idrac9-r750") as served, client_for(served) as client:
        client.set_boot_override("Cd")
        (sent,) = served.writes()
        assert sent.method == "POST"
        assert sent.path.endswith("EID_674_Manager.ImportSystemConfiguration")
        assert sent.body["ShareParameters"] == {"Target": ["ALL"]}
        assert 'ServerBoot.1#FirstBootDevice">VCD-DVD<' in sent.body["ImportBuffer"]
        assert 'FQDD="iDRAC.Embedded.1"' in sent.body["ImportBuffer"]


def test_dell_override_leaves_a_uefi_mode_alone():
    """Writing BootSourceOverrideMode queues an iDRAC BIOS job that collides with a pending
    BIOS-settings job (LC068): the capture already reads UEFI, so it is not written."""
    with replay("dell-idrac9-r750") as served, client_for(served) as client:
        client.set_boot_override("Pxe")
        (sent,) = patches(served, "/Systems/System.Embedded.1")
        assert "BootSourceOverrideMode" not in sent.body["Boot"]


def test_a_legacy_mode_is_switched_to_uefi():
    with replay("ami-megarac-gigabyte") as served, client_for(served) as client:
        client.set_boot_override("Pxe")
        (sent,) = patches(served, "/Systems/Self")
        assert sent.body["Boot"]["BootSourceOverrideMode"] == "UEFI"


def test_a_target_the_bmc_does_not_list_is_refused_before_sending():
    with replay("nvidia-gb200") as served, client_for(served) as client:
        with pytest.raises(errors.ActionNotSupported, match="UefiHttp"):
            client.set_boot_override("UefiHttp")
        assert served.writes() == []


@pytest.mark.parametrize(
    ("capture", "attribute"),
    [("dell-idrac9-r750", "HttpDev1Uri"), ("hpe-ilo5-dl385-gen10plus-v2", "UrlBootFile")],
)
def test_uefi_http_boot_uri_is_a_bios_attribute_on_dell_and_hpe(capture, attribute):
    with replay(capture) as served, client_for(served) as client:
        client.set_boot_override("UefiHttp", http_boot_uri=ISO)
        bios = [s for s in served.writes() if "bios" in s.path.lower()]
        system = [s for s in served.writes() if s.path.rstrip("/").lower().endswith(
            ("/system.embedded.1", "/systems/1"))]  # fmt: skip
        assert bios and bios[0].body["Attributes"][attribute] == ISO
        assert system and "HttpBootUri" not in system[0].body["Boot"]
        assert system[0].body["Boot"]["BootSourceOverrideTarget"] == "UefiHttp"


def test_hpe_refusal_during_post_is_its_own_transient_error():
    refusal = {
        "error": {
            "code": "iLO.0.10.ExtendedInfo",
            "message": "See @Message.ExtendedInfo for more information.",
            "@Message.ExtendedInfo": [{"MessageId": "iLO.2.14.UnableToModifyDuringSystemPOST"}],
        }
    }
    with replay("hpe-ilo5-dl385-gen10plus-v2") as served, client_for(served) as client:
        served.script("PATCH", "/redfish/v1/Systems/1", (400, refusal))
        with pytest.raises(errors.SystemInPost) as raised:
            client.set_boot_override("Pxe")
        assert raised.value.transient


# -- ETags --------------------------------------------------------------------------------------


def test_every_request_asks_for_an_uncompressed_answer_so_etags_stay_strong():
    with replay("hpe-ilo5-dl385-gen10plus-v2") as served, client_for(served) as client:
        client.system_info()
        assert served.sent and all(
            s.headers.get("Accept-Encoding") == "identity" for s in served.sent
        )


def test_a_refused_weak_etag_is_sent_strong_then_not_at_all():
    path = "/redfish/v1/systems/1/bios/settings/"
    precondition = sample("error.json")
    with replay("hpe-ilo5-dl385-gen10plus-v2") as served, client_for(served) as client:
        served.script("PATCH", path, (412, precondition), (412, precondition))
        client.patch(path, {"Attributes": {"WorkloadProfile": "Custom"}}, etag='W/"1103906B"')
        sent = patches(served, path)
        assert [s.headers.get("If-Match") for s in sent] == ['W/"1103906B"', '"1103906B"', None]


def test_428_is_answered_with_the_resources_etag():
    path = "/redfish/v1/Systems/1/Pending"
    required = {"error": {"code": "Base.1.8.PreconditionRequired", "message": "If-Match"}}
    with replay("lenovo-xcc-sr670v2") as served, client_for(served) as client:
        served.script("PATCH", path, (428, required))
        client.patch(path, {"AssetTag": "R12-U07"})
        sent = patches(served, path)
        assert [s.headers.get("If-Match") for s in sent] == [None, '"23ec95705c6528a309d"']


# -- virtual media ------------------------------------------------------------------------------


def test_insert_media_adds_what_the_bmc_says_is_missing_as_sushy_does():
    target = "/redfish/v1/Managers/1/VirtualMedia/VirtualMedia1/Actions/VirtualMedia.InsertMedia"
    with replay("supermicro-hgx-sys821ge") as served, client_for(served) as client:
        served.script(
            "POST",
            target,
            (400, sample("transfer_proto_required_error3.json")),
            (400, sample("transfer_method_required_error.json")),
            (400, sample("credentials_required_error.json")),
        )
        with pytest.raises(errors.RedfishError, match="reads back"):
            client_insert(client)  # the capture never shows the medium: only the sends count
        sent = [s.body for s in served.writes() if s.path == target]
        assert sent[0] == {"Image": ISO}  # no Inserted/WriteProtected: X11/X12 refuse them
        assert sent[1] == {"Image": ISO, "TransferProtocolType": "HTTPS"}
        assert sent[2]["TransferMethod"] == "Stream"
        assert sent[3]["UserName"] == "none" and sent[3]["Password"] == "none"
        assert len(sent) == 4


def test_a_failed_read_back_names_no_media_url():
    """The ISO URL carries the key that serves the node's boot credential (issue 30)."""
    with replay("ami-megarac-gigabyte") as served, client_for(served) as client:
        with pytest.raises(errors.RedfishError) as raised:
            client_insert(client)
    assert "abc.iso" not in str(raised.value) and "media.example" not in str(raised.value)


def client_insert(client):
    return virtual_media.insert(client, ISO)


def test_ami_and_dgx_insert_media_carries_protocol_and_credentials_up_front():
    with replay("ami-megarac-gigabyte") as served, client_for(served) as client:
        with pytest.raises(errors.RedfishError, match="reads back"):
            client_insert(client)
        (sent,) = [s for s in served.writes() if s.path.endswith("InsertMedia")]
        assert sent.body == {
            "Image": ISO,
            "TransferProtocolType": "HTTPS",
            "UserName": "none",
            "Password": "none",
        }


def test_lenovo_media_without_insert_action_is_patched_with_if_match():
    with replay("lenovo-xcc-sr670v2") as served, client_for(served) as client:
        with pytest.raises(errors.RedfishError, match="reads back"):
            client_insert(client)
        (sent,) = [s for s in served.writes() if s.method == "PATCH"]
        assert sent.body["Image"] == ISO and sent.body["Inserted"] is True
        assert sent.headers.get("If-Match")


def test_nvidia_openbmc_refuses_a_plain_http_image_before_sending():
    with replay("nvidia-gb200") as served, client_for(served) as client:
        with pytest.raises(errors.ConfigurationError, match="https://"):
            virtual_media.insert(client, "http://media.example/boot.iso")
        assert served.writes() == []


# -- firmware -----------------------------------------------------------------------------------


def simple_updates(served):
    return [s for s in served.writes() if "SimpleUpdate" in s.path]


@pytest.mark.parametrize(
    ("capture", "target", "expected"),
    [
        # XCC allows only BMC-Backup as a target: none is sent for the running BMC.
        ("lenovo-xcc-sr670v2", "/redfish/v1/UpdateService/FirmwareInventory/BMC-Primary",
         {"ImageURI": IMAGE, "TransferProtocol": "HTTPS"}),
        # Dell documents Targets as unsupported; it declares OnReset among its apply times.
        ("dell-idrac9-r750", "/redfish/v1/UpdateService/FirmwareInventory/Current-159-1.8.2__"
         "BIOS.Setup.1-1", {"ImageURI": IMAGE, "TransferProtocol": "HTTPS",
                            "@Redfish.OperationApplyTime": "OnReset"}),
        # The Cray EX235n requires TransferProtocol and lists its Targets.
        ("hpe-cray-ex235n", "/redfish/v1/UpdateService/FirmwareInventory/BMC",
         {"ImageURI": IMAGE, "TransferProtocol": "HTTPS",
          "Targets": ["/redfish/v1/UpdateService/FirmwareInventory/BMC"]}),
        # DGX H100 requires TransferProtocol and declares no Targets.
        ("nvidia-dgx-h100", "/redfish/v1/UpdateService/FirmwareInventory/HostBMC_0",
         {"ImageURI": IMAGE, "TransferProtocol": "HTTPS"}),
    ],
)  # fmt: skip
def test_simple_update_follows_the_action_info(capture, target, expected):
    with replay(capture) as served, client_for(served) as client:
        client.update_firmware(image_uri=IMAGE, targets=[target], kind="bmc")
        (sent,) = simple_updates(served)
        assert sent.body == expected


def test_a_protocol_the_bmc_does_not_fetch_over_is_refused_before_sending():
    with replay("ami-megarac-gigabyte") as served, client_for(served) as client:
        with pytest.raises(errors.ActionNotSupported, match="HTTP, FTP"):
            client.update_firmware(image_uri=IMAGE, kind="bios")
        assert served.writes() == []


def test_a_refused_simple_update_falls_back_to_multipart_push(tmp_path):
    image = tmp_path / "bios-9.9.9.bin"
    image.write_bytes(b"\x00" * 4096)
    opened = []

    def open_image():
        opened.append(1)
        return image.open("rb")

    with replay("dell-idrac9-r750") as served, client_for(served) as client:
        served.script(
            "POST",
            "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
            (400, sample("error.json")),
        )
        served.script("POST", "/redfish/v1/UpdateService/MultipartUpload", (202, None))
        client.update_firmware(
            image_uri=IMAGE, open_image=open_image, filename=image.name, kind="bios"
        )
        push = served.writes()[-1]
        assert push.path == "/redfish/v1/UpdateService/MultipartUpload" and opened == [1]
        parameters = multipart_parameters(push)
        assert parameters == {"Targets": [], "@Redfish.OperationApplyTime": "OnReset", "Oem": {}}
        assert 'filename="bios-9.9.9.bin"' in push.body


def multipart_parameters(sent) -> dict:
    text = sent.body
    start = text.index("{", text.index('name="UpdateParameters"'))
    return json.JSONDecoder().raw_decode(text[start:])[0]


@pytest.mark.parametrize(
    ("capture", "kind", "expected"),
    [
        ("nvidia-gb200", "bmc", {"Targets": [], "ForceUpdate": True}),
        ("supermicro-hgx-sys821ge", "bmc", {
            "Targets": ["/redfish/v1/Managers/1"], "@Redfish.OperationApplyTime": "Immediate",
            "Oem": {"Supermicro": {"BMC": {"PreserveCfg": True, "PreserveSdr": True,
                                           "PreserveSsl": True, "BackupBMC": True}}}}),
        ("supermicro-hgx-sys821ge", "bios", {
            "Targets": ["/redfish/v1/Systems/1/Bios"],
            "@Redfish.OperationApplyTime": "Immediate",
            "Oem": {"Supermicro": {"BIOS": {"PreserveME": True, "PreserveNVRAM": True,
                                            "PreserveSMBIOS": True, "BackupBIOS": False}}}}),
    ],
)  # fmt: skip
def test_multipart_parameters_are_the_vendors(capture, kind, expected, tmp_path):
    image = tmp_path / f"{kind}-9.9.9.bin"
    image.write_bytes(b"\x01" * 1024)
    with replay(capture) as served, client_for(served) as client:
        with image.open("rb") as stream:
            client.update_firmware(image=stream, filename=image.name, kind=kind)
        (push,) = [s for s in served.writes() if s.method == "POST"]
        assert multipart_parameters(push) == expected


def test_an_image_over_max_image_size_is_refused_before_upload(tmp_path):
    image = tmp_path / "hgx-9.9.9.fwpkg"
    with image.open("wb") as handle:
        handle.truncate(209715200 + 1)  # sparse: one byte over the GB200's MaxImageSizeBytes
    with replay("nvidia-gb200") as served, client_for(served) as client:
        with image.open("rb") as stream, pytest.raises(errors.ConfigurationError, match="at most"):
            client.update_firmware(image=stream, filename=image.name, kind="hgx")
        assert served.writes() == []


def test_uploads_get_minutes_not_the_read_timeout():
    assert UPLOAD_TIMEOUT_S >= 600


# -- Dell job queue -----------------------------------------------------------------------------


def test_dell_pending_job_refusal_clears_the_queue_and_stages_again():
    settings = "/redfish/v1/Systems/System.Embedded.1/Bios/Settings"
    job_service = "/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/DellJobService"
    with replay("dell-idrac9-r750") as served, client_for(served) as client:
        served.override(job_service, sample("job_service.json", DELL_SAMPLES))
        served.script("PATCH", settings, (400, sample("error_pending_job.json", DELL_SAMPLES)))
        client.set_bios_attributes({"SysProfile": "PerfOptimized"})
        kinds = [(s.method, s.path.rsplit("/", 1)[-1]) for s in served.writes()]
        assert kinds == [
            ("PATCH", "Settings"),
            ("POST", "DellJobService.DeleteJobQueue"),
            ("PATCH", "Settings"),
        ]
        clear = served.writes()[1]
        assert clear.body == {"JobID": "JID_CLEARALL"}


def test_dell_pending_job_error_is_typed():
    with replay("dell-idrac9-r750") as served, client_for(served) as client:
        served.script(
            "PATCH",
            "/redfish/v1/Systems/System.Embedded.1",
            (400, sample("error_running_job.json", DELL_SAMPLES)),
        )
        with pytest.raises(errors.PendingJob):
            client.patch("/redfish/v1/Systems/System.Embedded.1", {"Boot": {}})


@pytest.mark.parametrize(
    ("capture", "path", "message_id"),
    [
        ("dell-idrac9-r750", "/redfish/v1/Systems/System.Embedded.1", "IDRAC.2.8.SYS518"),
        ("hpe-ilo5-dl385-gen10plus-v2", "/redfish/v1/Systems/1",
         "iLO.2.14.InvalidOperationForSystemState"),
        ("hpe-ilo5-dl385-gen10plus-v2", "/redfish/v1/Systems/1",
         "iLO.2.14.UnableToModifyDuringSystemPOST"),
    ],
)  # fmt: skip
def test_not_ready_refusals_are_transient_for_the_engine(capture, path, message_id):
    """sushy's connector retries SYS518 and InvalidOperationForSystemState; Ironic the POST
    refusal. The engine spends its transient budget on them instead of failing the run."""
    body = {"error": {"@Message.ExtendedInfo": [{"MessageId": message_id, "Message": "retry"}]}}
    with replay(capture) as served, client_for(served) as client:
        served.script("PATCH", path, (400, body))
        with pytest.raises(errors.RequestRejected) as raised:
            client.patch(path, {"Boot": {"BootSourceOverrideTarget": "Pxe"}})
    outcome = classify(raised.value)
    assert isinstance(outcome, TransientFailure), outcome


# -- against the lab's vendor flavours, which refuse as the vendors do -------------------------


@pytest.mark.parametrize("flavour", ["dgx", "gb200"])
def test_openbmc_media_that_mounts_late_is_read_back_until_it_shows(flavour):
    """DGX and GB200 BMCs answer InsertMedia at once and mount a moment later; DGX also wants
    credentials (sushy credentials_required_error.json). The read-back waits the mount out."""
    with LabHall(1, flavours=(flavour,), speed=4, seed=11) as hall:
        with lab_client(hall.bmcs[0]) as client:
            seen = virtual_media.insert(client, ISO)
    assert seen.inserted and seen.image == ISO
