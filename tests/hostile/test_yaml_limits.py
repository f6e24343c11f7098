"""Hostile YAML: aliases that stand for billions of values, nesting ten thousand deep, a huge file.

Each is refused with a 400 that names the limit, quickly, and nothing is stored.
"""

from __future__ import annotations

import pytest

from fleet.documents import DocumentInvalid, load_lined_yaml
from fleet.models import Manifest
from fleet.safe_yaml import MAX_BYTES, MAX_DEPTH, MAX_NODES
from tests import factories
from tests.api.conftest import client_for


def billion_laughs(levels: int) -> str:
    """The classic: each level a list of ten aliases to the level before."""
    lines = ['lol0: &lol0 "lol"']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*lol{level - 1}"] * 10)
        lines.append(f"lol{level}: &lol{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def deeply_nested(depth: int) -> str:
    return "sku: x\nversion: 1.0.0\ndescription: " + "[" * depth + "]" * depth + "\n"


def _messages(text: str) -> list[str]:
    with pytest.raises(DocumentInvalid) as excinfo:
        load_lined_yaml(text)
    return excinfo.value.messages()


def test_billion_laughs_is_refused_before_a_value_is_built():
    # 10**9 values in under a kilobyte: the limit is measured on the parser's events, never expanded.
    text = billion_laughs(9)
    assert len(text) < 1024
    (message,) = _messages(text)
    assert message.startswith("line ")
    assert "(limit: aliases)" in message
    assert f"limit of {MAX_NODES} values" in message


def test_aliases_within_the_limit_load_and_keep_their_lines():
    text = "base: &base {sku: a, version: 1.0.0}\ncopy: *base\nother:\n  key: 1\n"
    doc = load_lined_yaml(text)
    assert doc.data["copy"] == {"sku": "a", "version": "1.0.0"}
    # The alias's contents are not walked again: a path through it has the alias key's line.
    assert doc.line(("copy", "sku")) == 2
    assert doc.line(("base", "sku")) == 1
    assert doc.line(("other", "key")) == 4


def test_an_alias_to_its_own_container_is_refused():
    (message,) = _messages("a: &a [1, *a]\n")
    assert "alias *a refers to a node that contains it" in message


def test_ten_thousand_levels_deep_is_refused_naming_the_depth_limit():
    (message,) = _messages(deeply_nested(10_000))
    assert message == (
        f"line 3: (limit: depth): the document nests deeper than the limit of {MAX_DEPTH} levels"
    )


def test_nesting_up_to_the_limit_is_loaded():
    doc = load_lined_yaml("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    assert "a" in doc.data


def test_a_document_over_the_size_limit_is_refused():
    text = "description: " + "x" * MAX_BYTES + "\n"
    (message,) = _messages(text)
    assert f"over the limit of {MAX_BYTES} bytes" in message


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        pytest.param(billion_laughs(6), "aliases", id="billion-laughs"),
        pytest.param(deeply_nested(10_000), "depth", id="ten-thousand-deep"),
        pytest.param("x: " + "y" * (MAX_BYTES + 1), "size", id="oversize"),
    ],
)
def test_the_api_answers_400_naming_the_limit_and_stores_nothing(db, alice, sku, text, limit):
    response = client_for(alice).post("/api/v1/manifests/", {"yaml_text": text}, format="json")
    assert response.status_code == 400, response.content[:500]
    (message,) = response.json()["yaml_text"]
    assert f"(limit: {limit})" in message
    assert not Manifest.objects.exists()


def test_a_sample_manifest_with_an_anchor_is_still_accepted(db, alice, sku):
    text = factories.sample_manifest_yaml()
    response = client_for(alice).post("/api/v1/manifests/", {"yaml_text": text}, format="json")
    assert response.status_code == 201, response.json()
