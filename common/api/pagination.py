"""Cursor pagination: stable pages however fast the fleet changes underneath the reader."""

from __future__ import annotations

from rest_framework import pagination


class CursorPagination(pagination.CursorPagination):
    """Opaque `cursor` links; `page_size` up to 1000; ordering from `?ordering=` or the view."""

    page_size_query_param = "page_size"
    max_page_size = 1000
    # Views set `ordering`; the fallback is the newest first by primary key.
    ordering = "-pk"


class NodePagePagination(pagination.PageNumberPagination):
    """Numbered pages of nodes (`?page=N`, `page_size` up to 1000), for lists that say how many
    there are in all beside a page of them (a publish's preview)."""

    page_size = 200
    page_size_query_param = "page_size"
    max_page_size = 1000
