"""The boot image recipe's inputs: the machine's mirror, the cache keys, what each build adds."""

from __future__ import annotations

import ast
import json
import stat
from pathlib import Path

import pytest

from bootimage import MARKER
from bootimage.build import (
    MANIFEST,
    MEASURED_BOOT,
    Recipe,
    _make_iso,
    _overlay_tree,
    add_file,
    base_key,
    grub_config,
    image_key,
)
from bootimage.debian import BuildError, _deb822_fields, debian_source

KERNEL = ("linux-image-6.1.0-56-amd64", "6.1.192-2")


@pytest.fixture
def apt_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr("bootimage.debian.os_suite", lambda: "bookworm")
    (tmp_path / "sources.list.d").mkdir()
    return tmp_path


def test_the_mirror_is_read_from_deb822_sources_skipping_security(apt_dir):
    (apt_dir / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    source = debian_source(apt_dir)
    assert (source.mirror, source.suite) == ("http://mirror.example/debian", "bookworm")


def test_the_mirror_is_read_from_one_line_sources(apt_dir):
    (apt_dir / "sources.list").write_text(
        "# deb http://old.example/debian bookworm main\n"
        "deb [signed-by=/usr/share/keyrings/k.gpg] http://mirror.example/debian bookworm main\n"
    )
    assert debian_source(apt_dir).mirror == "http://mirror.example/debian"


def test_no_mirror_for_the_suite_is_a_clear_error(apt_dir):
    (apt_dir / "sources.list").write_text("deb http://mirror.example/debian trixie main\n")
    with pytest.raises(BuildError, match="no Debian mirror for bookworm"):
        debian_source(apt_dir)


def test_deb822_continuation_lines_join():
    fields = _deb822_fields("Types: deb\nURIs: http://a.example/\n http://b.example/\nSuites: x")
    assert fields["uris"] == "http://a.example/ http://b.example/"


def _recipe(tmp_path: Path, ca: bytes = b"CA-1", agent_code: str = "x = 1\n", **kw) -> Recipe:
    (tmp_path / "ca.pem").write_bytes(ca)
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "__init__.py").write_text(agent_code)
    return Recipe(ca_cert=tmp_path / "ca.pem", agent_dir=agent, **kw)


def test_the_image_key_follows_agent_code_ca_and_os_url_but_the_base_key_does_not(tmp_path):
    first = _recipe(tmp_path)
    base = base_key(first, "bookworm", KERNEL)
    key = image_key(first, base)

    assert image_key(_recipe(tmp_path), base) == key  # same inputs, same key
    # Each recipe rewrites the files: compare before making the next.
    for change in (
        {"agent_code": "x = 2\n"},
        {"ca": b"CA-2"},
        {"host_os_url": "https://10.0.2.2:18443"},
    ):
        changed = _recipe(tmp_path, **change)
        assert base_key(changed, "bookworm", KERNEL) == base, change
        assert image_key(changed, base) != key, change
    more = _recipe(tmp_path, extra_packages=("sedutil",))
    assert base_key(more, "bookworm", KERNEL) != base
    assert base_key(first, "bookworm", ("linux-image-6.1.0-57-amd64", "6.1.200-1")) != base


def test_each_build_adds_init_the_ca_the_agent_and_the_trusted_keys(tmp_path):
    keys = tmp_path / "keys.gpg"
    keys.write_bytes(b"public keys")
    recipe = _recipe(tmp_path, trusted_keys=keys)
    (recipe.agent_dir / "__pycache__").mkdir()
    (recipe.agent_dir / "__pycache__" / "x.pyc").write_bytes(b"")

    root = _overlay_tree(recipe, tmp_path / "overlay")

    assert (root / "init").stat().st_mode & stat.S_IXUSR
    assert (root / "etc/greenlight/ca.pem").read_bytes() == b"CA-1"
    assert (root / "opt/greenlight/agent/__init__.py").read_text() == "x = 1\n"
    assert not (root / "opt/greenlight/agent/__pycache__").exists()
    assert (root / "root/.gnupg/trustedkeys.kbx").read_bytes() == b"public keys"
    init = (root / "init").read_text()
    assert "cd /opt/greenlight" in init and "python3 -m agent" in init
    assert "modprobe t10-pi" in init  # before nvme, or there is no /dev/nvme0


def test_the_installed_os_grub_measures_what_it_loads_and_the_medium_says_nothing(tmp_path):
    # No ISO is made (its folder does not exist): the grub.cfg each tree gets is the test.
    out = tmp_path / "out"
    out.mkdir()
    for name in ("vmlinuz", "initrd"):
        (out / name).write_bytes(b"x")
    for tree, measured in ((tmp_path / "os", True), (tmp_path / "medium", False)):
        with pytest.raises((BuildError, FileNotFoundError, OSError)):
            _make_iso(out, tree, "a=b", tmp_path / "none" / "x.iso", None, measured)
    installed = (tmp_path / "os/boot/grub/grub.cfg").read_text()
    assert installed.startswith(MEASURED_BOOT)
    medium = (tmp_path / "medium/boot/grub/grub.cfg").read_text()
    assert "insmod tpm" not in medium and "linuxefi" not in medium
    assert medium.count(MARKER) == 0 and medium.count("a=b") == 1


def test_the_installed_os_enters_its_kernel_by_the_efi_stub_on_uefi_and_as_before_on_bios():
    """Only the EFI stub hands the firmware's TPM event log to the kernel: without it the
    installed OS has no binary_bios_measurements and its quote cannot be replayed."""
    config = grub_config("a=b", measured=True)
    body = config[config.index("menuentry") :]
    assert '  if [ "$grub_platform" = efi ]; then\n' in body
    assert "    linuxefi /boot/vmlinuz " in body and body.count("a=b") == 2
    assert "    initrdefi /boot/initrd\n  else\n" in body
    assert "  else\n    linux /boot/vmlinuz " in body and "    initrd /boot/initrd\n  fi\n" in body


def test_a_file_added_beside_a_build_is_listed_with_its_digest(tmp_path):
    (tmp_path / MANIFEST).write_text('{"files": {"os.img": {"sha256": "00", "size": 1}}}')
    extra = tmp_path / "variant.img"
    extra.write_bytes(b"changed")
    entry = add_file(tmp_path, "os-variant.img", extra)
    assert entry["size"] == 7 and len(entry["sha256"]) == 64
    listed = json.loads((tmp_path / MANIFEST).read_text())["files"]
    assert listed["os-variant.img"] == entry and "os.img" in listed
    for bad in ("../x", ".hidden", MANIFEST):
        with pytest.raises(BuildError):
            add_file(tmp_path, bad, extra)


def test_bootimage_stands_alone():
    """Production tooling a site runs on a build host: no Django app, no lab, no test code."""
    package = Path(__file__).resolve().parents[2] / "bootimage"
    imported: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    forbidden = {
        "lab",
        "fleet",
        "provisioning",
        "acceptance",
        "console",
        "greenlight",
        "django",
        "tests",
    }
    assert imported & forbidden == set()
    assert "subprocess" in imported  # it really drives the tools, not a stand-in
