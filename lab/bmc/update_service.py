"""The UpdateService, FirmwareInventory and TaskService of a lab BMC, and the resets and job
queue that complete an update: a mixin of BmcApp, which supplies the node, routing and helpers.
"""

from __future__ import annotations

import asyncio
import json
import re
from posixpath import basename
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from aiohttp import web

from ..node import FIRMWARE_COMPONENTS, JobQueueBusy
from . import refusals
from . import resources as r
from . import update_documents as u
from .answers import canonical, json_body, redfish_error
from .member_flavours import POWER_SHELF_APPLY_TIME, POWER_SHELF_APPLY_TIMES

if TYPE_CHECKING:
    from ..node import LabNode
    from .answers import Handler
    from .flavours import Flavour

IMAGE_NAME = re.compile(
    r"^(?P<component>" + "|".join(FIRMWARE_COMPONENTS) + r")[-_]v?(?P<version>.+?)"
    r"(?:\.(?:bin|exe|fwpkg|img|pldm|zip|signed))?$",
    re.IGNORECASE,
)
# Real seconds an "update_answer_held" fault holds the answer to an update it started: longer
# than the Redfish client's 10 s timeout, so the sender never learns the update was accepted.
UPDATE_ANSWER_HOLD_SECONDS = 15.0


class UpdateServiceHandlers:
    """The firmware update, inventory and task handlers of BmcApp."""

    if TYPE_CHECKING:
        node: LabNode
        flavour: Flavour
        paths: r.Paths
        push_apply_time: str

        def _add(self, path: str, **handlers: Handler) -> None: ...
        def _doc(self, body: dict[str, Any], status: int = 200) -> web.Response: ...
        def _expands(self, request: web.Request) -> bool: ...
        def _gated(self) -> web.Response | None: ...
        def _now(self) -> float: ...

    # -- firmware ---------------------------------------------------------------------------

    async def _inventory(self, request, match):
        entries = u.firmware_entries(self.node, self.flavour)
        members = [f"{self.paths.inventory}/{e.id}" for e in entries]
        body = r.collection(self.paths, self.paths.inventory, members, "SoftwareInventory")
        if self._expands(request):
            # $expand=.($levels=1): every member's body in place of its link.
            body["Members"] = [u.firmware_item(self.paths, e) for e in entries]
        return self._doc(body)

    async def _firmware_item(self, request, match):
        for entry in u.firmware_entries(self.node, self.flavour):
            if entry.id.lower() == match["id"]:
                return self._doc(u.firmware_item(self.paths, entry))
        return redfish_error(404, "no such firmware item")

    async def _start_update(self, image_name: str, targets: list[str]) -> web.Response:
        parsed = IMAGE_NAME.match(image_name)
        if parsed is None:
            return redfish_error(400, f"cannot tell the component of image {image_name!r}")
        component = parsed["component"].lower()
        entries = u.firmware_entries(self.node, self.flavour)
        for target in targets:
            target_id = canonical(target).rsplit("/", 1)[-1]
            # Supermicro names the component's device, not its inventory entry (Managers/1,
            # Systems/1/Bios; libredfish src/supermicro.rs): the entry whose RelatedItem it is.
            match = [e for e in entries if e.id.lower() == target_id] or [
                e
                for e in entries
                if e.running and e.related and canonical(e.related) == canonical(target)
            ]
            if not match:
                return redfish_error(400, f"unknown update target {target}")
            if match[0].component != component:
                return redfish_error(400, f"image {image_name} does not fit target {target}")
        f = self.flavour
        activation = f.bmc_activation if component == "bmc" else f.host_activation
        if self.push_apply_time == "OnReset":
            # A shelf's PMC left at OnReset runs the image at its next reboot (member_flavours).
            activation = "manager_reset"
        try:
            task = self.node.start_update(
                component, parsed["version"], self._now(), progress=f.update_progress,
                activation=activation,
            )  # fmt: skip
        except JobQueueBusy as busy:
            return job_queue_busy(busy.message_id)
        faults = self.node.faults
        if faults.param("update_answer_held") == component:
            # Accepted, and the task runs; the answer comes too late for anyone waiting on it.
            faults.clear("update_answer_held")
            await asyncio.sleep(UPDATE_ANSWER_HOLD_SECONDS)
        return self._update_accepted(task)

    async def _simple_update(self, request, match):
        gated = self._gated()
        if gated:
            return gated
        body = await json_body(request)
        uri = (body or {}).get("ImageURI")
        if not isinstance(uri, str) or not uri:
            return redfish_error(400, "ImageURI is required")
        refused = refusals.missing_parameters(
            self.flavour.update_required, body or {}, self.paths.simple_update
        )
        if refused:
            return refused
        return await self._start_update(
            unquote(basename(urlsplit(uri).path)), list(body.get("Targets") or [])
        )

    async def _multipart_update(self, request, match):
        gated = self._gated()
        if gated:
            return gated
        if not request.content_type.startswith("multipart/"):
            return redfish_error(415, "multipart/form-data expected")
        reader = await request.multipart()
        parameters: dict[str, Any] = {}
        filename = ""
        async for part in reader:
            if part.name == "UpdateParameters":
                parameters = json.loads(await part.text() or "{}")
            elif part.name == "UpdateFile":
                filename = part.filename or ""
                await part.read()
        if not filename:
            return redfish_error(400, "UpdateFile is required")
        return await self._start_update(filename, list(parameters.get("Targets") or []))

    # -- tasks ------------------------------------------------------------------------------

    async def _task_service(self, request, match):
        return self._doc(
            {
                "@odata.id": self.flavour.link("/redfish/v1/TaskService"),
                "Id": "TaskService",
                "Tasks": self.paths.link(self.paths.tasks),
            }
        )

    async def _tasks(self, request, match):
        members = [f"{self.paths.tasks}/{t}" for t in self.node.tasks]
        return self._doc(r.collection(self.paths, self.paths.tasks, members, "Task"))

    # -- firmware completion and activation ------------------------------------------------

    def _firmware_routes(self) -> None:
        """Register the update, inventory and task routes, and those that complete an update."""
        p, f = self.paths, self.flavour
        # The shelf's HttpPushUriApplyTime, kept across the PMC's reboots; "" where not served.
        self.push_apply_time = POWER_SHELF_APPLY_TIME if f.member == "power_shelf" else ""
        if self.push_apply_time:
            self._add(p.update, GET=self._update_service, PATCH=self._patch_update_service)
        else:
            self._add(p.update, GET=self._update_service)
        self._add(p.inventory, GET=self._inventory)
        self._add(p.inventory + "/{id}", GET=self._firmware_item)
        if f.simple_update:
            self._add(p.simple_update, POST=self._simple_update)
        if f.multipart_path:
            self._add(f.multipart_path, POST=self._multipart_update)
        self._add("/redfish/v1/TaskService", GET=self._task_service)
        self._add(p.tasks, GET=self._tasks)
        self._add(p.tasks + "/{id}", GET=self._task)
        if f.update_progress == "openbmc":
            self._add(p.tasks + "/{id}/Monitor", GET=self._task_monitor)
        self._add(p.manager_reset, POST=self._manager_reset)
        if f.update_progress == "dell_job":
            self._add(p.dell_job_service, GET=lambda req, m: self._doc(u.dell_job_service(p)))
            self._add(p.delete_job_queue, POST=self._delete_job_queue)
        if "aux_power" in (f.bmc_activation, f.host_activation):
            self._add(p.aux_power_reset, POST=self._aux_power_reset)

    def _update_accepted(self, task) -> web.Response:
        """The answer to an accepted update, as the flavour's BMC gives it."""
        if task is None:
            # iLO 5/6: 200, a success message and no task (HPE iLO RESTful API reference).
            return web.json_response(
                {
                    "error": {
                        "code": "iLO.0.10.ExtendedInfo",
                        "message": "See @Message.ExtendedInfo for more information.",
                        "@Message.ExtendedInfo": [{"MessageId": "Base.1.4.Success"}],
                    }
                }
            )
        if self.flavour.update_progress == "openbmc":
            # bmcweb: 202 with the Task, its Location the task's monitor (task.hpp).
            response = web.json_response(u.task(self.paths, task), status=202)
            response.headers["Location"] = self.flavour.link(
                f"{self.paths.tasks}/{task.id}/Monitor"
            )
            return response
        response = web.Response(status=202)
        response.headers["Location"] = self.flavour.link(f"{self.paths.tasks}/{task.id}")
        return response

    async def _update_service(self, request, match):
        body = u.update_service(self.paths)
        if self.push_apply_time:
            body["HttpPushUriOptions"] = {"HttpPushUriApplyTime": {
                "ApplyTime": self.push_apply_time,
                "ApplyTime@Redfish.AllowableValues": list(POWER_SHELF_APPLY_TIMES),
            }}  # fmt: skip
        if self.flavour.update_progress == "hpe_flash":
            body["Oem"] = {"Hpe": u.hpe_update_state(self.node.flash_view(self._now()))}
        return self._doc(body)

    async def _patch_update_service(self, request, match):
        """A shelf's PMC takes HttpPushUriOptions.HttpPushUriApplyTime.ApplyTime (SHELF, PSM in
        member_flavours.py) among its AllowableValues, and nothing else of its UpdateService."""
        body = await json_body(request) or {}
        options = body.get("HttpPushUriOptions")
        timing = options.get("HttpPushUriApplyTime") if isinstance(options, dict) else None
        value = timing.get("ApplyTime") if isinstance(timing, dict) else None
        if body != {"HttpPushUriOptions": {"HttpPushUriApplyTime": {"ApplyTime": value}}}:
            return refusals.error(
                400, f"{refusals.BASE}.PropertyNotWritable",
                "Only HttpPushUriOptions/HttpPushUriApplyTime/ApplyTime can be written here.",
                MessageArgs=sorted(body),
            )  # fmt: skip
        if value not in POWER_SHELF_APPLY_TIMES:
            return refusals.error(
                400, f"{refusals.BASE}.PropertyValueNotInList",
                f"The value '{value}' for the property ApplyTime is not in the list of "
                "acceptable values.",
                MessageArgs=[str(value), "ApplyTime"],
                RelatedProperties=["#/HttpPushUriOptions/HttpPushUriApplyTime/ApplyTime"],
            )  # fmt: skip
        self.push_apply_time = value
        return web.Response(status=204)

    async def _task_monitor(self, request, match):
        """bmcweb's task monitor: 202 and the Task while it runs, 204 once when it has ended,
        404 after that (redfish-core/lib/task.hpp)."""
        for task_id in self.node.tasks:
            if task_id.lower() == match["id"]:
                task = self.node.task_view(task_id, self._now())
                if task.state in ("Running", "Scheduled"):
                    return self._doc(u.task(self.paths, task), 202)
                if not task.monitor_ended:
                    task.monitor_ended = True
                    return web.Response(status=204)
                break
        return redfish_error(404, "no such task monitor", "Base.1.8.ResourceMissingAtURI")

    async def _manager_reset(self, request, match):
        body = await json_body(request) or {}
        if body.get("ResetType") not in ("GracefulRestart", "ForceRestart"):
            return redfish_error(400, f"ResetType {body.get('ResetType')!r} is not allowed")
        self.node.activate("manager_reset", self._now())
        return web.Response(status=204)

    async def _delete_job_queue(self, request, match):
        body = await json_body(request) or {}
        if body.get("JobID") != "JID_CLEARALL" and body.get("JobID") not in self.node.tasks:
            return redfish_error(400, f"no job {body.get('JobID')!r}", "IDRAC.2.8.SUP011")
        if body.get("JobID") == "JID_CLEARALL":
            self.node.clear_job_queue()
        else:
            self.node.tasks.pop(str(body["JobID"]), None)
        # iDRAC answers 200 with a success message, queue empty or not (idempotent).
        return web.json_response(
            {"@Message.ExtendedInfo": [{"MessageId": "IDRAC.2.8.SUP018",
                                        "Message": "Successfully deleted the job(s)."}]}
        )  # fmt: skip

    async def _aux_power_reset(self, request, match):
        body = await json_body(request) or {}
        if body.get("ResetType") not in ("AuxPowerCycle", "AuxPowerCycleForce"):
            return redfish_error(400, f"ResetType {body.get('ResetType')!r} is not allowed")
        self.node.activate("aux_power", self._now())
        return web.Response(status=204)

    async def _task(self, request, match):
        for task_id in self.node.tasks:
            if task_id.lower() == match["id"]:
                task = self.node.task_view(task_id, self._now())
                # bmcweb's Task resource answers 200; its monitor says 202 (_task_monitor).
                running = task.state == "Running" and self.flavour.update_progress != "openbmc"
                status = 202 if running else 200
                return self._doc(u.task(self.paths, task), status)
        return redfish_error(404, "no such task")


def job_queue_busy(message_id: str) -> web.Response:
    """iDRAC's refusal of a new job while one is pending (LC068) or running (RAC0679), with
    the bodies sushy recorded (tests/oem/dell/unit/json_samples/error_pending_job.json,
    error_running_job.json)."""
    if message_id.endswith("LC068"):
        message = (
            "Unable to perform the import or export operation because there are pending "
            "attribute changes or a configuration job is in progress."
        )
    elif message_id.endswith("RAC0679"):
        message = "A job operation is already running. Retry the operation after the existing job is completed."
    else:
        message = "An update is already in progress."
    return redfish_error(400, message, message_id)
