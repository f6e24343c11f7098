"""The node inventory as others read it (API, CSV export, DCIM sync): one queryset, one shape."""

from __future__ import annotations

from django.db.models import Case, IntegerField, OuterRef, QuerySet, Subquery, Value, When

from acceptance.choices import Verdict
from acceptance.models import GateResult
from fleet.models import Node


def last_verdict_subquery() -> Subquery:
    """The worst gate verdict of a node's latest run that has gate results (fail > error > pass).

    One correlated subquery, so a page of nodes costs no extra query per node.
    """
    severity = Case(
        When(verdict=Verdict.FAIL, then=Value(0)),
        When(verdict=Verdict.ERROR, then=Value(1)),
        default=Value(2),
        output_field=IntegerField(),
    )
    worst = (
        GateResult.objects.filter(node=OuterRef("pk"))
        .annotate(severity=severity)
        .order_by("-run_id", "severity")
        .values("verdict")[:1]
    )
    return Subquery(worst)


def inventory_nodes() -> QuerySet[Node]:
    """Nodes with everything the inventory shows, in a fixed number of queries per page."""
    return (
        Node.objects.select_related("sku", "rack__site", "manifest__sku")
        .prefetch_related("components")
        .annotate(last_verdict=last_verdict_subquery())
    )
