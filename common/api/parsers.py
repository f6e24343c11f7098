"""The API's JSON parser: a body nested too deeply is a 400, not a RecursionError (a 500)."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, refusing a document nested deeper than Python's decoder recurses."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json.loads recurses once per level: "[" * 100000 exhausts the stack. DRF turns a
            # ValueError into a 400, but not this.
            raise ParseError("JSON parse error - the document is nested too deeply") from None
