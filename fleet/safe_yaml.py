"""The one YAML loader for text that comes from outside: bounded in size, depth and aliases.

PyYAML's safe loader builds no objects of its own, but it trusts the shape of the text: a few
hundred bytes of nested aliases ("billion laughs") stand for billions of nodes to whoever walks
them, and a document nested ten thousand levels deep overflows the recursive composer. Both are
measured here from the parser's event stream, which is flat and never expands an alias, before a
single node is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

MAX_BYTES = 256 * 1024
MAX_DEPTH = 64
MAX_NODES = 50_000


class YamlLimitExceeded(Exception):
    """The text is over one of the loader's limits; `limit` names which, `line` where."""

    def __init__(self, limit: str, line: int, message: str):
        self.limit = limit
        self.line = line
        super().__init__(message)


@dataclass
class _OpenCollection:
    anchor: str | None
    nodes: int = 1


def _measure(text: str, *, max_depth: int, max_nodes: int) -> None:
    """Raise YamlLimitExceeded if the text nests too deep or stands for too many nodes.

    Counts every node an alias stands for (an anchor's size is known once its collection ends),
    so the total is what a walk of the loaded data would visit, computed without walking it.
    """
    anchor_sizes: dict[str, int] = {}
    stack: list[_OpenCollection] = []
    total = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= max_depth:
                raise YamlLimitExceeded(
                    "depth",
                    line,
                    f"the document nests deeper than the limit of {max_depth} levels",
                )
            stack.append(_OpenCollection(event.anchor))
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            closed = stack.pop()
            if closed.anchor is not None:
                anchor_sizes[closed.anchor] = closed.nodes
            size = closed.nodes
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                anchor_sizes[event.anchor] = 1
            size = 1
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchor_sizes:
                if any(open_.anchor == event.anchor for open_ in stack):
                    raise YamlLimitExceeded(
                        "aliases",
                        line,
                        f"alias *{event.anchor} refers to a node that contains it",
                    )
                continue  # an undefined alias: the composer reports it with its line
            size = anchor_sizes[event.anchor]
        else:
            continue
        if stack:
            stack[-1].nodes += size
        else:
            total += size
        if total + sum(open_.nodes for open_ in stack) > max_nodes:
            raise YamlLimitExceeded(
                "aliases",
                line,
                f"the document stands for more than the limit of {max_nodes} values once its "
                "aliases are expanded",
            )


def compose_bounded(
    text: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> tuple[yaml.Node | None, object]:
    """Compose one YAML document within the limits; return its node graph and its data.

    Raises YamlLimitExceeded for text over a limit and yaml.YAMLError for malformed text. The
    node graph shares one node per anchor, as the text does: walk it with a set of seen nodes.
    """
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise YamlLimitExceeded(
            "size", 1, f"the document is {size} bytes, over the limit of {max_bytes} bytes"
        )
    _measure(text, max_depth=max_depth, max_nodes=max_nodes)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data
