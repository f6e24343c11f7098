"""Pages of the fleet app."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from .models import Site


@login_required
def site_overview(request):
    """Every site with its racks."""
    sites = Site.objects.prefetch_related("racks")
    return render(request, "fleet/overview.html", {"sites": sites})
