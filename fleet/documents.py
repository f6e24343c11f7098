"""YAML documents with errors that name the line and the field.

Shared by golden manifests and acceptance profiles: load YAML keeping each key's line, and collect
every schema error (not just the first) so an admin fixes a document in one pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from .safe_yaml import YamlLimitExceeded, compose_bounded

SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class DocumentError:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


class DocumentInvalid(Exception):
    """A YAML document that is malformed or breaks its schema; carries every error found."""

    def __init__(self, errors: list[DocumentError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))

    def messages(self) -> list[str]:
        return [str(e) for e in self.errors]


@dataclass
class ParsedDocument:
    sku: str
    version: str
    spec: dict[str, Any]


@dataclass
class LinedYaml:
    """Loaded YAML data and the line of every key path (tuples of keys and indexes)."""

    data: Any
    lines: dict[tuple, int] = field(default_factory=dict)

    def line(self, path: tuple) -> int:
        """The line of `path`, or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


def _record_lines(root: yaml.Node, lines: dict[tuple, int]) -> None:
    """Record the line of every key path, visiting each node once.

    An alias is the same node as its anchor: its contents keep the anchor's lines, and a path
    through the alias takes the alias key's line. Walking into it again would expand the alias.
    """
    seen: set[int] = set()
    pending: list[tuple[yaml.Node, tuple]] = [(root, ())]
    while pending:
        node, path = pending.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if id(node) in seen:
            continue
        seen.add(id(node))
        children: list[tuple[yaml.Node, tuple]] = []
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
                lines[path + (key,)] = key_node.start_mark.line + 1
                children.append((value_node, path + (key,)))
        elif isinstance(node, yaml.SequenceNode):
            children = [(item, path + (index,)) for index, item in enumerate(node.value)]
        pending.extend(reversed(children))  # in document order, as the text reads


def load_lined_yaml(text: str) -> LinedYaml:
    """Load one YAML document within the loader's limits, keeping the line of every key.

    Raises DocumentInvalid naming the line of a syntax error, or the limit the text is over.
    """
    if not text or not text.strip():
        raise DocumentInvalid([DocumentError(1, "(document)", "the document is empty")])
    try:
        node, data = compose_bounded(text)
    except YamlLimitExceeded as exc:
        raise DocumentInvalid(
            [DocumentError(exc.line, f"(limit: {exc.limit})", str(exc))]
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise DocumentInvalid(
            [DocumentError(line, "(syntax)", f"malformed YAML: {exc.problem or exc}")]
        ) from None
    except yaml.YAMLError as exc:
        # The reader rejects control characters before it has a mark to give.
        raise DocumentInvalid([DocumentError(1, "(syntax)", f"malformed YAML: {exc}")]) from None
    if node is None:
        raise DocumentInvalid([DocumentError(1, "(document)", "the document is empty")])
    lines: dict[tuple, int] = {}
    _record_lines(node, lines)
    return LinedYaml(data, lines)


class SchemaChecker:
    """Collects errors while a schema function walks a document."""

    def __init__(self, doc: LinedYaml):
        self.doc = doc
        self.errors: list[DocumentError] = []

    def error(self, path: tuple, message: str) -> None:
        name = ".".join(str(p) for p in path) or "(document)"
        self.errors.append(DocumentError(self.doc.line(path), name, message))

    def mapping(self, value: Any, path: tuple, *, required: bool = True) -> dict | None:
        if value is None:
            if required:
                self.error(path, "is required")
            return None
        if not isinstance(value, dict):
            self.error(path, f"must be a mapping, got {type(value).__name__}")
            return None
        return value

    def string(
        self, parent: dict, key: str, path: tuple, *, required: bool = True, pattern=None, hint=""
    ) -> str | None:
        value = parent.get(key)
        where = path + (key,)
        if value is None:
            if required:
                self.error(where, "is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.error(where, f"must be a string, got {type(value).__name__}")
            return None
        value = str(value)
        if pattern is not None and not pattern.match(value):
            self.error(where, f"{value!r} is not {hint or 'valid'}")
            return None
        return value

    def unknown_keys(self, mapping: dict, allowed: set[str], path: tuple) -> None:
        for key in mapping:
            if key not in allowed:
                self.error(
                    path + (key,),
                    f"unknown field {key!r}; expected one of {', '.join(sorted(allowed))}",
                )

    def raise_if_errors(self) -> None:
        if self.errors:
            raise DocumentInvalid(sorted(self.errors, key=lambda e: e.line))


def next_version(version: str) -> str:
    """The next patch version: 1.4.2 -> 1.4.3."""
    if not SEMVER.match(version):
        return version + ".1"
    major, minor, patch = (int(p) for p in version.split("."))
    return f"{major}.{minor}.{patch + 1}"


def replace_version(yaml_text: str, version: str) -> str:
    """Rewrite the top-level `version:` line of a document, keeping everything else as written."""
    pattern = re.compile(r"^version:.*$", re.MULTILINE)
    if pattern.search(yaml_text):
        return pattern.sub(f'version: "{version}"', yaml_text, count=1)
    return f'version: "{version}"\n' + yaml_text
