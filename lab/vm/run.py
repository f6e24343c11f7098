"""A VM-tier run: real VMs provisioned through Greenlight's real pipeline, over real Redfish.

It builds (or reuses) the boot image, brings up libvirt, the VMs and one Redfish emulator per VM,
starts Greenlight's processes (web, the agents' API over TLS, a worker, beat) as children,
enrolls the VMs through Greenlight's own Redfish enrollment, starts a run on each and waits
(polling the database) until every node is awaiting approval or failed. `manage.py vmlab` and
the tier's test use it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bootimage.build import BuildResult, Recipe, add_file, build
from fleet.choices import NodeState
from fleet.lifecycle import RUN_STARTABLE_STATES
from fleet.models import Manifest, Node, Rack, Site
from provisioning.choices import ACTIVE_RUN_STATUSES
from provisioning.core.runs import abort_run, start_runs
from provisioning.intake.enrollment import enroll_node
from provisioning.models import Run

from .. import processes
from .documents import publish_os_image, publish_vm_documents, vm_sku
from .packages import kvm_works
from .pki import AgentApiPki, ensure_pki
from .signing import SigningKey, ensure_signing_key
from .summary import node_summary
from .tier import VmTier

GUEST_HOST = "10.0.2.2"  # the host as QEMU's user networking shows it to a guest
SETTLED_STATES = (NodeState.AWAITING_APPROVAL, NodeState.FAILED)
# QEMU 7.2's emulated NVMe under plain emulation loses queued commands under load: I/O timeouts,
# aborts that end nothing, fio never finishing (the sixth session's CI failure). Legacy
# interrupts (pci=nomsi) made it rarer here (one run in four, against three in six) but did not
# end it; the tier's profile now keeps one I/O in flight (documents.STORAGE_THRESHOLDS). A command
# that is stuck is aborted after 10 s and the controller reset (the backing file is in memory, so
# a healthy command takes milliseconds): one stall costs seconds, not minutes.
GUEST_KERNEL_ARGS = "pci=nomsi nvme_core.io_timeout=10"


@dataclass
class VmLabConfig:
    nodes: int = 2
    workdir: Path = Path("var/vmlab")
    # Fixed, because the installed OS image carries the agents' API URL: a port that changed
    # every run would rebuild the image every run.
    agent_api_port: int = 18443
    timeout_s: float = 900.0
    concurrency: int = 4
    # Where the boot image is built and kept (default: WORKDIR/image); tests share one cache.
    image_dir: Path | None = None
    # Which VMs have a TPM 2.0 (by position); the acceptance profile (documents.PROFILES).
    tpm: tuple[bool, ...] = ()
    profile: str = "storage"


class VmLabRun:
    """Context manager: everything is up inside the block; `run_pass()` does one pass."""

    def __init__(self, config: VmLabConfig) -> None:
        self.config = config
        self.workdir = config.workdir.resolve()
        self.pki: AgentApiPki | None = None
        self.image: BuildResult | None = None
        self.recipe: Recipe | None = None
        self.signing: SigningKey | None = None
        self.agent_api_url = f"https://{GUEST_HOST}:{config.agent_api_port}"
        self.tier: VmTier | None = None
        self.children: list = []
        self.nodes: list[Node] = []
        self.timings: dict[str, float | bool] = {}
        self._logs: list = []
        self._restore_sigterm = lambda: None

    def _log(self, name: str):
        path = self.workdir / "logs" / f"{name}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("ab")
        self._logs.append(handle)
        return handle

    def __enter__(self) -> VmLabRun:
        self._restore_sigterm = processes.interrupt_on_sigterm()
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        c = self.config
        agent_api_url = self.agent_api_url
        started = time.monotonic()
        self.pki = ensure_pki(self.workdir / "pki")
        self.signing = signing = ensure_signing_key(self.workdir / "signing")
        self.recipe = Recipe(
            ca_cert=self.pki.ca_cert,
            host_os_url=agent_api_url,
            trusted_keys=signing.public_keyring,
            kernel_args=GUEST_KERNEL_ARGS,
        )
        self.image = build(
            self.recipe,
            (c.image_dir or self.workdir / "image").resolve(),
            log=self._log("image-build"),
        )
        self.timings["image_s"] = round(time.monotonic() - started, 1)
        self.timings["image_reused"] = self.image.reused

        started = time.monotonic()
        kvm = kvm_works(self.image.path("vmlinuz"))
        self.tier = VmTier(self.workdir / "tier", c.nodes, kvm=kvm, tpm=c.tpm)
        self.tier.up()
        self.timings["tier_up_s"] = round(time.monotonic() - started, 1)
        self.timings["kvm"] = kvm

        env = processes.child_env(
            # Nodes reach the agents' API at the host's address on their user network; the
            # emulators (on the host) fetch each node's ISO from the same server on loopback.
            GREENLIGHT_AGENT_URL=agent_api_url,
            ALLOWED_HOSTS=f"127.0.0.1,localhost,{GUEST_HOST}",
            GREENLIGHT_AGENT_REQUIRE_TLS=1,
            GREENLIGHT_BOOT_MEDIA_URL=f"https://127.0.0.1:{c.agent_api_port}",
            GREENLIGHT_BOOT_MEDIA_DIR=str(self.workdir / "boot-media"),
            GREENLIGHT_BOOT_IMAGE_DIR=str(self.image.out),
            GREENLIGHT_STEP_LEASE_S=60,
            GREENLIGHT_SWEEP_GRACE_S=10,
            GREENLIGHT_SWEEP_SECONDS=5,
        )
        web, web_url = processes.start_web(env, log=self._log("web"))
        self.children.append(web)
        api, _ = processes.start_agent_api(
            env,
            port=c.agent_api_port,
            log=self._log("agent-api"),
            tls=(self.pki.server_cert, self.pki.server_key, self.pki.ca_cert),
        )
        self.children.append(api)
        self.children.append(
            processes.start_worker(
                env, concurrency=c.concurrency, name="vmlab", log=self._log("worker")
            )
        )
        self.children.append(
            processes.start_beat(env, self.workdir / "beat-schedule", log=self._log("beat"))
        )
        # Greenlight serves the built images itself (/boot/v1/images/): the ISO to its own
        # workers on loopback, the OS image to the nodes' agents over the agents' TLS server.
        files = self.image.manifest["files"]
        publish_vm_documents(
            iso={
                "url": f"{web_url}/boot/v1/images/ephemeral.iso",
                "sha256": files["ephemeral.iso"]["sha256"],
            },
            os_image={
                "url": f"{agent_api_url}/boot/v1/images/os.img",
                "sha256": files["os.img"]["sha256"],
                "signature": signing.sign(self.image.path("os.img")),
            },
            profile=c.profile,
        )
        self.nodes = self._enroll()

    def _enroll(self) -> list[Node]:
        """Each VM through Greenlight's own Redfish enrollment, its BMC certificate pinned."""
        site, _ = Site.objects.get_or_create(name="vm-tier")
        rack, _ = Rack.objects.get_or_create(site=site, name="VM-R01", defaults={"height_u": 42})
        nodes = []
        for position, vm in enumerate(self.tier.nodes, start=1):
            result = enroll_node(
                vm.bmc.url,
                vm.bmc.username,
                vm.bmc.password,
                sku=vm_sku(),
                rack=rack,
                position=position,
                fingerprint=vm.bmc.fingerprint,
                actor_label="vmlab",
                timeout=30.0,
            )
            nodes.append(result.node)
        # A run left active by an earlier vmlab that was stopped drives a VM that no longer
        # exists (the tier recreates its VMs): end it, as an operator would.
        for run in Run.objects.filter(node__in=nodes, status__in=ACTIVE_RUN_STATUSES):
            abort_run(run, actor=None, reason="vmlab restarted; its VMs were recreated")
        return nodes

    def __exit__(self, *exc_info: object) -> None:
        for proc in reversed(self.children):
            processes.stop(proc)
        self.children.clear()
        if self.tier:
            self.tier.down()
        for handle in self._logs:
            handle.close()
        self._logs.clear()
        self._restore_sigterm()

    # -- other images ----------------------------------------------------------------------

    def build_variant(self, name: str, agent_dir: Path) -> BuildResult:
        """The tier's images built again with another agent tree, into the image folder's `name`.

        The agent is part of the initramfs: a tree that differs by one byte is an installed OS
        whose GRUB measures another initramfs. The slow base archive is the tier's own, reused.
        """
        return build(
            replace(self.recipe, agent_dir=agent_dir),
            self.image.out / name,
            cache=self.image.out / "cache",
            log=self._log("image-build"),
        )

    def publish_os_image(self, name: str, image: Path) -> Manifest:
        """Serve `image` beside the built ones as `name`, signed with the tier's key, and publish
        a manifest version that installs it; returns that manifest."""
        entry = add_file(self.image.out, name, image)
        return publish_os_image(
            {
                "url": f"{self.agent_api_url}/boot/v1/images/{name}",
                "sha256": entry["sha256"],
                "signature": self.signing.sign(self.image.out / name),
            }
        )

    # -- passes ----------------------------------------------------------------------------

    def run_pass(self) -> dict[str, Any]:
        """Start a run on every node; wait until each is awaiting approval or failed."""
        nodes = Node.objects.filter(
            pk__in=[n.pk for n in self.nodes], state__in=RUN_STARTABLE_STATES
        ).select_related("rack", "sku")
        marks = {vm.spec.name: vm.spec.console_log.stat().st_size for vm in self.tier.nodes}
        started = time.monotonic()
        runs, refused = start_runs(nodes.order_by("pk"))
        if refused:
            raise RuntimeError(f"runs refused to start: {refused}")
        finished = self._wait(runs)
        return {
            "finished": finished,
            "seconds": round(time.monotonic() - started, 1),
            "nodes": [
                node_summary(node, runs.get(node.pk), vm, marks[vm.spec.name])
                for node, vm in zip(self.nodes, self.tier.nodes, strict=True)
            ],
        }

    def _wait(self, runs: dict[int, Run], poll_s: float = 2.0) -> bool:
        deadline = time.monotonic() + self.config.timeout_s
        ids = [run.pk for run in runs.values()]
        while time.monotonic() < deadline:
            active = Run.objects.filter(pk__in=ids, status__in=ACTIVE_RUN_STATUSES)
            if not active.exists():
                return True
            settled = Node.objects.filter(pk__in=runs.keys(), state__in=SETTLED_STATES)
            if settled.count() == len(runs):
                return True
            time.sleep(poll_s)
        return False
