"""Manifest validation: every error names its line and its field, in the parser and the model."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError

from fleet.documents import DocumentInvalid
from fleet.manifests import parse_manifest
from fleet.models import Manifest
from tests import factories


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _messages(text: str) -> list[str]:
    with pytest.raises(DocumentInvalid) as excinfo:
        parse_manifest(text)
    return excinfo.value.messages()


def test_the_sample_manifest_is_valid():
    parsed = parse_manifest(factories.sample_manifest_yaml())
    assert parsed.sku == "hgx-h100-8gpu"
    assert parsed.version == "1.0.0"
    assert set(parsed.spec["firmware"]) == {"bmc", "bios", "hgx", "nic", "dpu", "nvme"}


def test_malformed_yaml_names_its_line():
    text = factories.sample_manifest_yaml().replace(
        "boot_order: [Pxe, Hdd]", "boot_order: [Pxe, Hdd"
    )
    messages = _messages(text)
    assert len(messages) == 1
    line = _line_of(text, "boot_order:")
    # PyYAML reports an unclosed flow sequence where it noticed it: at or after the opening line.
    reported = int(messages[0].split(":")[0].removeprefix("line "))
    assert reported >= line
    assert "(syntax): malformed YAML" in messages[0]


def test_unknown_component_names_line_and_field():
    text = factories.sample_manifest_yaml().replace("  hgx:\n", "  gpu:\n")
    line = _line_of(text, "  gpu:")
    messages = _messages(text)
    assert any(
        m.startswith(f"line {line}: firmware.gpu: unknown component 'gpu'") for m in messages
    ), messages


def test_missing_sha256_names_the_component_line_and_field():
    text = factories.sample_manifest_yaml()
    bios_sha = re.search(r"  bios:\n(?:    .*\n)*?(    sha256: [0-9a-f]{64}\n)", text).group(1)
    text = text.replace(bios_sha, "", 1)
    line = _line_of(text, "  bios:")
    messages = _messages(text)
    assert messages == [f"line {line}: firmware.bios.sha256: is missing"]


def test_malformed_sha256_is_refused():
    text = factories.sample_manifest_yaml()
    nvme_sha = re.search(r"  nvme:\n(?:    .*\n)*?    (sha256: [0-9a-f]{64})\n", text).group(1)
    text = text.replace(nvme_sha, "sha256: not-a-digest", 1)
    line = _line_of(text, "not-a-digest")
    assert _messages(text) == [
        f"line {line}: firmware.nvme.sha256: 'not-a-digest' is not 64 lowercase hex digits"
    ]


@pytest.mark.parametrize("bad", ['"1.0"', '"v1.0.0"', '"1.0.0-rc1"', '"latest"'])
def test_bad_version_string_names_line_and_field(bad):
    text = factories.sample_manifest_yaml().replace('version: "1.0.0"', f"version: {bad}", 1)
    line = _line_of(text, f"version: {bad}")
    messages = _messages(text)
    assert messages == [f"line {line}: version: {bad.strip(chr(34))!r} is not a version like 1.2.0"]


def test_every_error_is_reported_at_once():
    text = (
        factories.sample_manifest_yaml()
        .replace('version: "1.0.0"', 'version: "one"', 1)
        .replace("  hgx:\n", "  gpu:\n")
    )
    messages = _messages(text)
    assert [m.split(": ")[1] for m in messages] == ["version", "firmware.gpu"]


@pytest.mark.django_db
def test_model_clean_keys_the_errors_to_the_yaml_field(sku):
    text = factories.sample_manifest_yaml().replace('version: "1.0.0"', 'version: "1.0"', 1)
    manifest = Manifest(yaml_text=text)
    with pytest.raises(ValidationError) as excinfo:
        manifest.full_clean()
    errors = excinfo.value.message_dict
    assert list(errors) == ["yaml_text"]
    assert errors["yaml_text"] == ["line 3: version: '1.0' is not a version like 1.2.0"]


@pytest.mark.django_db
def test_model_clean_refuses_an_unknown_sku():
    text = factories.sample_manifest_yaml()
    with pytest.raises(ValidationError) as excinfo:
        Manifest(yaml_text=text).full_clean()
    assert excinfo.value.message_dict["yaml_text"] == ["line 1: sku: unknown SKU 'hgx-h100-8gpu'"]


@pytest.mark.django_db
def test_model_clean_derives_sku_version_and_spec(sku):
    manifest = Manifest(yaml_text=factories.sample_manifest_yaml())
    manifest.full_clean()
    assert manifest.sku == sku
    assert manifest.version == "1.0.0"
    assert manifest.spec["os_image"]["signature"] == "lab-signing-key-1:ubuntu-24.04-gpu"


def test_the_ephemeral_boot_and_the_os_disk_are_validated():
    base = factories.sample_manifest_yaml()
    parsed = parse_manifest(base)
    assert parsed.spec["ephemeral"]["boot"] == "pxe"
    assert set(parsed.spec["ephemeral"]) == {"boot", "kernel", "initrd"}

    virtual = base.replace("  boot: pxe", "  boot: virtual_media")
    assert any("ephemeral.iso" in m and "virtual_media boot needs" in m for m in _messages(virtual))
    unknown = base.replace("  boot: pxe", "  boot: floppy")
    assert any("unknown boot method 'floppy'" in m for m in _messages(unknown))

    on_sda = base.replace(
        "  signature: lab-signing-key-1", "  disk: /dev/sda\n  signature: lab-signing-key-1"
    )
    assert parse_manifest(on_sda).spec["os_image"]["disk"] == "/dev/sda"
    hostile = on_sda.replace("/dev/sda", "/dev/sda; rm -rf /")
    assert any("os_image.disk" in m for m in _messages(hostile))
