"""Build the boot images, or reuse them when nothing that goes into them changed.

Output (in one directory): `vmlinuz`, `initrd`, `ephemeral.iso` (whose kernel line carries the
marker `@GREENLIGHT_ARGS@`, replaced per node), optionally `os.img` (the VM tier's installed OS),
and `manifest.json` with the sha256 of each and the key of the inputs they were built from.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import MARKER, rootfs
from .debian import BuildError, debian_source, kernel_package

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
AGENT = HERE.parent / "agent"
MANIFEST = "manifest.json"


# The installed OS's GRUB measures what it loads into the TPM (kernel and initramfs into PCR 9,
# its commands into PCR 8), so the attestation gate can judge them; on a node without a TPM it
# measures nothing and boots the same. Not the ephemeral medium: its kernel command line carries
# the node's boot credential, which would then stand in the TPM's event log.
MEASURED_BOOT = "insmod tpm\n"


def grub_config(kernel_args: str, measured: bool = False) -> str:
    """A medium's grub.cfg; `measured`: the installed OS's, measured into the TPM.

    The installed OS also enters its kernel through the kernel's EFI stub on UEFI (linuxefi):
    Debian's GRUB 2.06 `linux` does so only under Secure Boot, and otherwise exits the firmware's
    boot services itself, so the kernel never receives the firmware's TPM event log (the stub is
    what hands it over) and the quote could not be replayed. BIOS boots as before.
    """
    config = (FILES / "grub.cfg").read_text().replace(MARKER, kernel_args)
    if not measured:
        return config
    lines = config.splitlines(keepends=True)
    linux = next(i for i, line in enumerate(lines) if line.lstrip().startswith("linux "))
    initrd = next(i for i, line in enumerate(lines) if line.lstrip().startswith("initrd "))
    if initrd != linux + 1:
        raise BuildError("grub.cfg: initrd must follow linux")
    kernel, ramdisk = lines[linux].strip(), lines[initrd].strip()
    chosen = (
        '  if [ "$grub_platform" = efi ]; then\n'
        f"    {kernel.replace('linux ', 'linuxefi ', 1)}\n"
        f"    {ramdisk.replace('initrd ', 'initrdefi ', 1)}\n"
        "  else\n"
        f"    {kernel}\n"
        f"    {ramdisk}\n"
        "  fi\n"
    )
    return MEASURED_BOOT + "".join(lines[:linux]) + chosen + "".join(lines[initrd + 1 :])


@dataclass(frozen=True)
class Recipe:
    """Everything a build depends on; its key names the result."""

    ca_cert: Path
    host_os_url: str | None = None
    extra_packages: tuple[str, ...] = ()
    extra_debs: tuple[Path, ...] = ()
    overlay: Path | None = None
    # OpenPGP public keys os_install trusts: the agent checks an OS image's signature with gpgv.
    trusted_keys: Path | None = None
    # Kernel arguments every boot of these images gets, before the per-node ones.
    kernel_args: str = ""
    agent_dir: Path = AGENT

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(rootfs.PACKAGES + self.extra_packages))


@dataclass
class BuildResult:
    out: Path
    manifest: dict
    reused: bool
    timings: dict[str, float] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        return self.out / name


def base_key(recipe: Recipe, suite: str, kernel: tuple[str, str]) -> str:
    """Key of the slow base archive: its packages, suite, kernel and the code that builds it."""
    digest = hashlib.sha256()
    for part in (suite, *kernel, *recipe.packages, *rootfs.MODULE_EXCLUDES, *rootfs.STRIP):
        digest.update(part.encode() + b"\0")
    digest.update((HERE / "rootfs.py").read_bytes())
    for deb in recipe.extra_debs:
        digest.update(_sha256(deb).encode())
    return digest.hexdigest()[:24]


def image_key(recipe: Recipe, base: str) -> str:
    """Key of the finished images: the base, the recipe's files, the agent, the CA, the OS URL."""
    digest = hashlib.sha256(base.encode())
    trees = [HERE, recipe.agent_dir] + ([recipe.overlay] if recipe.overlay else [])
    for tree in trees:
        for path in sorted(tree.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(tree)).encode() + b"\0")
                digest.update(path.read_bytes())
    digest.update(recipe.ca_cert.read_bytes())
    digest.update(recipe.trusted_keys.read_bytes() if recipe.trusted_keys else b"")
    digest.update((recipe.host_os_url or "").encode())
    digest.update(recipe.kernel_args.encode())
    return digest.hexdigest()[:24]


def build(recipe: Recipe, out: Path, cache: Path | None = None, log=None) -> BuildResult:
    """Build into `out`, or reuse what is there when its key matches and its files are intact."""
    if not recipe.ca_cert.is_file():
        raise BuildError(f"CA certificate {recipe.ca_cert} does not exist")
    if recipe.host_os_url and any(c.isspace() for c in recipe.host_os_url):
        raise BuildError("--host-os-url must not contain whitespace")
    if any(c in recipe.kernel_args for c in "\n\r$;\"'{}#"):
        raise BuildError("--kernel-args may hold only plain key=value words")
    out.mkdir(parents=True, exist_ok=True)
    cache = cache or out / "cache"
    log = log or subprocess.DEVNULL
    timings: dict[str, float] = {}
    source = debian_source()
    kernel = kernel_package()
    bkey = base_key(recipe, source.suite, kernel)
    key = image_key(recipe, bkey)
    existing = _intact_manifest(out, key)
    if existing:
        return BuildResult(out, existing, reused=True)

    base_dir = cache / f"base-{bkey}"
    started = time.monotonic()
    if not (base_dir / "done").exists():
        shutil.rmtree(base_dir, ignore_errors=True)
        _, _, release = rootfs.build_base(
            source, kernel[0], recipe.packages, recipe.extra_debs, base_dir, log
        )
        (base_dir / "done").write_text(release + "\n")
    release = (base_dir / "done").read_text().strip()
    timings["base"] = round(time.monotonic() - started, 1)

    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=out, prefix="work-") as work:
        overlay = Path(work) / "overlay.cpio.zst"
        rootfs.pack_cpio(_overlay_tree(recipe, Path(work) / "overlay"), overlay, log)
        # The kernel unpacks concatenated archives in order, later files over earlier ones: the
        # cached base is reused byte for byte and only the small overlay is packed per build.
        _concat([base_dir / "base.cpio.zst", overlay], out / "initrd")
        shutil.copy(base_dir / "vmlinuz", out / "vmlinuz")
        timings["initrd"] = round(time.monotonic() - started, 1)

        started = time.monotonic()
        fixed = f"{recipe.kernel_args} " if recipe.kernel_args else ""
        _make_iso(out, Path(work) / "iso-ephemeral", fixed + MARKER, out / "ephemeral.iso", log)
        names = ["vmlinuz", "initrd", "ephemeral.iso"]
        if recipe.host_os_url:
            args = f"{fixed}greenlight.environment=host_os greenlight.url={recipe.host_os_url}"
            _make_iso(out, Path(work) / "iso-os", args, out / "os.img", log, measured=True)
            names.append("os.img")
        else:
            (out / "os.img").unlink(missing_ok=True)
        timings["iso"] = round(time.monotonic() - started, 1)

    manifest = {
        "key": key,
        "base_key": bkey,
        "suite": source.suite,
        "kernel": {"package": kernel[0], "version": kernel[1], "release": release},
        "packages": list(recipe.packages),
        "marker": MARKER,
        "host_os_url": recipe.host_os_url,
        "files": {name: _file_entry(out / name) for name in names},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return BuildResult(out, manifest, reused=False, timings=timings)


def _overlay_tree(recipe: Recipe, root: Path) -> Path:
    """What each build adds over the base: init, DHCP hook, Greenlight's CA, the agent."""
    (root / "etc/greenlight").mkdir(parents=True)
    shutil.copy(FILES / "init", root / "init")
    shutil.copy(FILES / "udhcpc.script", root / "etc/greenlight/udhcpc.script")
    for script in (root / "init", root / "etc/greenlight/udhcpc.script"):
        script.chmod(0o755)
    shutil.copy(recipe.ca_cert, root / "etc/greenlight/ca.pem")
    (root / "etc/greenlight/ca.pem").chmod(0o644)
    shutil.copytree(
        recipe.agent_dir,
        root / "opt/greenlight/agent",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    if recipe.trusted_keys:
        # gpgv with no --keyring reads ~/.gnupg/trustedkeys.kbx; init sets HOME=/root.
        (root / "root/.gnupg").mkdir(parents=True)
        shutil.copy(recipe.trusted_keys, root / "root/.gnupg/trustedkeys.kbx")
    if recipe.overlay:
        shutil.copytree(recipe.overlay, root, dirs_exist_ok=True, symlinks=True)
    for path in root.rglob("*"):
        if path.is_dir():
            path.chmod(0o700 if path.name == ".gnupg" or path.name == "root" else 0o755)
    root.chmod(0o755)
    return root


def _make_iso(
    out: Path, tree: Path, kernel_args: str, iso: Path, log, measured: bool = False
) -> None:
    """A hybrid ISO (BIOS and UEFI; CD or raw disk) booting our kernel and initrd."""
    (tree / "boot/grub").mkdir(parents=True)
    (tree / "boot/grub/grub.cfg").write_text(grub_config(kernel_args, measured))
    for name in ("vmlinuz", "initrd"):
        (tree / "boot" / name).hardlink_to(out / name)
    if shutil.which("grub-mkrescue") is None:
        raise BuildError(
            "grub-mkrescue is not installed (grub-common, grub-pc-bin, grub-efi-amd64-bin)"
        )
    result = subprocess.run(
        ["grub-mkrescue", "-o", str(iso), str(tree), "--", "-volid", "GREENLIGHT"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    if result.returncode:
        raise BuildError(f"grub-mkrescue failed with {result.returncode} (see the build log)")
    iso.chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)


def add_file(out: Path, name: str, source: Path) -> dict:
    """Put `source` beside a build in `out` as `name`, listed in its manifest (so served).

    For a second OS image a site (or the VM tier) publishes beside the built one; returns its
    manifest entry (sha256, size).
    """
    if "/" in name or name.startswith(".") or name == MANIFEST:
        raise BuildError(f"{name!r} is not a plain file name")
    path = out / MANIFEST
    manifest = json.loads(path.read_text())
    shutil.copy(source, out / name)
    entry = _file_entry(out / name)
    manifest["files"][name] = entry
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return entry


def _concat(parts: list[Path], target: Path) -> None:
    with target.open("wb") as dst:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, dst, 1 << 20)


def _intact_manifest(out: Path, key: str) -> dict | None:
    path = out / MANIFEST
    if not path.exists():
        return None
    manifest = json.loads(path.read_text())
    if manifest.get("key") != key:
        return None
    for name, entry in manifest["files"].items():
        target = out / name
        if not target.exists() or target.stat().st_size != entry["size"]:
            return None
        if _sha256(target) != entry["sha256"]:
            return None
    return manifest


def _file_entry(path: Path) -> dict:
    return {"sha256": _sha256(path), "size": path.stat().st_size}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
