"""The pages: the site overview, the rack view, the node panel, and decisions.

Views parse, authorise, call a service (console.board, console.panel, acceptance.decisions) and
render. The snapshot endpoints render the very fragments the pages include.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from acceptance import decisions, rack_decisions
from acceptance.choices import Verdict
from acceptance.parsers import PARSERS
from acceptance.uploads import UploadRefused, upload_output
from fleet.choices import NodeState
from fleet.models import Event, Node, Rack, Site, Sku
from provisioning.agents import logs as phase_logs
from provisioning.core import audit as drift_audit
from provisioning.core.phases import label_of
from provisioning.day2 import moves
from provisioning.day2.behind import with_manifests
from provisioning.models import PhaseRecord
from provisioning.site_work import site_service

from . import board, panel, rack_system

# Reading the board needs the view permission: charlie, with no role, sees nothing.
can_view = permission_required("fleet.view_node", raise_exception=True)


def viewer(view):
    return login_required(can_view(view))


class BoardFilter(forms.Form):
    """Filters of the overview; the same names work on the snapshot endpoint."""

    state = forms.ChoiceField(choices=[("", "Any state")] + NodeState.choices, required=False)
    sku = forms.ChoiceField(choices=[], required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        names = Sku.objects.values_list("name", flat=True)
        self.fields["sku"].choices = [("", "Any SKU")] + [(n, n) for n in names]

    def values(self) -> dict[str, str]:
        return self.cleaned_data if self.is_valid() else {"state": "", "sku": ""}


def _overview_context(request: HttpRequest, site: Site | None) -> dict:
    form = BoardFilter(request.GET or None)
    filters = form.values()
    seq = board.latest_seq()  # read before the counts: anything later arrives live
    return {
        "form": form,
        "site": site,
        "seq": seq,
        "board": board.overview(site, state=filters["state"], sku=filters["sku"]),
        "legend": board.state_legend(),
    }


@viewer
def site_overview(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Every rack with its counts per state and its progress to in-service."""
    site = get_object_or_404(Site, pk=pk) if pk is not None else None
    context = _overview_context(request, site)
    # Sites with their own workers and none alive: their runs wait (provisioning.site_work).
    context["unserved_sites"] = [
        s for s in site_service() if not s.served and (site is None or s.site == site.name)
    ]
    return render(request, "console/overview.html", context)


@viewer
def overview_snapshot(request: HttpRequest, pk: int | None = None) -> JsonResponse:
    """The overview's body as it is now (it is small: one row per rack) and the seq it is at."""
    site = get_object_or_404(Site, pk=pk) if pk is not None else None
    context = _overview_context(request, site)
    html = render_to_string("console/_overview_body.html", context, request=request)
    return JsonResponse({"seq": context["seq"], "html": html})


def _panel_nodes():
    """Nodes as the panel reads them: with their manifest and the published one, in one query."""
    return with_manifests(Node.objects.select_related("sku", "rack"))


def _rack_context(rack: Rack, node_ids: set[int] | None = None) -> dict:
    seq = board.latest_seq()
    slots = board.rack_slots(rack, node_ids)
    return {"rack": rack, "seq": seq, "slots": slots}


def _racks():
    # The rack-scale system (if any) comes in the rack's own query: other racks pay nothing.
    return Rack.objects.select_related("site", "system__sku", "system__domain")


def _with_system(context: dict) -> dict:
    """Add a rack-scale rack's system view, its members' slots given their heights and names."""
    system = rack_system.system_of(context["rack"])
    if system is not None:
        rack_system.place_members(system, context["slots"])
        context["system_view"] = rack_system.system_view(system, context["slots"])
    return context


@viewer
def rack_view(request: HttpRequest, pk: int) -> HttpResponse:
    """A rack elevation, live; `?node=<id>` opens that node's panel beside it."""
    rack = get_object_or_404(_racks(), pk=pk)
    context = _rack_context(rack)
    _with_system(context)
    context["elevation"] = board.elevation(rack, context["slots"])
    context["summary"] = board.rack_summary(rack, context["slots"])
    context["legend"] = board.state_legend()
    selected = request.GET.get("node", "")
    if selected.isdigit():
        node = get_object_or_404(_panel_nodes(), pk=selected, rack=rack)
        context["panel"] = panel.node_panel(node)
    return render(request, "console/rack.html", context)


@viewer
def rack_snapshot(request: HttpRequest, pk: int) -> JsonResponse:
    """Slots changed since `?since=SEQ` (and any `?nodes=1,2`), the summary, and the new seq.

    Without `since` every slot is returned: that is how a reconnecting browser re-syncs.
    """
    rack = get_object_or_404(_racks(), pk=pk)
    since = request.GET.get("since", "")
    wanted = {int(n) for n in request.GET.get("nodes", "").split(",") if n.isdigit()}
    seq = board.latest_seq()
    if since.isdigit():
        changed = Event.objects.filter(rack=rack, pk__gt=int(since) - board.SEQ_OVERLAP)
        wanted |= set(changed.values_list("node_id", flat=True).distinct())
        wanted.discard(None)
    all_slots = board.rack_slots(rack)
    context = _with_system({"rack": rack, "slots": all_slots})
    summary = board.rack_summary(rack, all_slots)
    slots = [s for s in all_slots if not since.isdigit() or s.node.pk in wanted]
    body = {
        "seq": seq,
        "full": not since.isdigit(),
        "slots": {s.node.pk: render_to_string("console/_slot.html", {"slot": s}) for s in slots},
        "summary": render_to_string(
            "console/_rack_summary.html", {"summary": summary, **context}, request=request
        ),
    }
    if "system_view" in context:
        # The rack's own state and fabric status: a rack event names no node, so this fragment
        # is sent with every snapshot of a rack-scale rack.
        body["system"] = render_to_string("console/_rack_system.html", context, request=request)
    return JsonResponse(body)


@viewer
def node_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A node's page: its rack with the panel open, or the panel alone for an unracked node."""
    node = get_object_or_404(_panel_nodes(), pk=pk)
    if node.rack_id:
        return redirect(f"{reverse('console:rack', args=[node.rack_id])}?node={node.pk}")
    return render(request, "console/node.html", {"panel": panel.node_panel(node), "seq": 0})


@viewer
def node_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The node panel fragment, for the rack page to open and refresh without a reload."""
    node = get_object_or_404(_panel_nodes(), pk=pk)
    return render(request, "console/_node_panel.html", {"panel": panel.node_panel(node)})


def _phase_record(pk: int) -> PhaseRecord:
    return get_object_or_404(PhaseRecord.objects.select_related("run__node__rack"), pk=pk)


@viewer
def phase_log(request: HttpRequest, pk: int) -> HttpResponse:
    """One phase's relayed output, a page at a time (`?page=N` or `?page=last`), redacted."""
    record = _phase_record(pk)
    try:
        page = phase_logs.read_page(record, request.GET.get("page", ""))
    except phase_logs.NoSuchPage as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    node = record.run.node
    return render(
        request,
        "console/phase_log.html",
        {"page": page, "record": record, "node": node, "label": label_of(record.phase)},
    )


@viewer
def phase_log_download(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """The whole of one phase's relayed output as a text file, redacted, streamed chunk by chunk."""
    record = _phase_record(pk)
    if not phase_logs.chunks(record):
        raise Http404("this phase has no log")
    response = StreamingHttpResponse(
        phase_logs.stream(record), content_type="text/plain; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{phase_logs.download_name(record)}"'
    return response


class ReasonForm(forms.Form):
    reason = forms.CharField(required=False, max_length=2000, widget=forms.Textarea)
    override = forms.BooleanField(required=False)


def _back(node: Node) -> HttpResponse:
    if node.rack_id:
        return redirect(f"{reverse('console:rack', args=[node.rack_id])}?node={node.pk}")
    return redirect("console:node", pk=node.pk)


def _decide(request: HttpRequest, pk: int, act) -> HttpResponse:
    node = get_object_or_404(Node, pk=pk)
    form = ReasonForm(request.POST)
    form.is_valid()
    try:
        decision = act(node, request.user, form.cleaned_data)
    except decisions.DecisionRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{node.serial}: {decision.get_kind_display().lower()}d.")
    return _back(node)


@login_required
@require_POST
def approve(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(
        request,
        pk,
        lambda node, user, data: decisions.approve(
            node, user, reason=data.get("reason", ""), override=data.get("override", False)
        ),
    )


@login_required
@require_POST
def quarantine(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(
        request,
        pk,
        # A rack member's quarantine degrades its rack too (a server's is the node's alone).
        lambda node, user, data: rack_decisions.quarantine_member(
            node, user, reason=data.get("reason", "")
        ),
    )


class MoveForm(forms.Form):
    reason = forms.CharField(required=False, max_length=2000)
    phase = forms.CharField(required=False, max_length=100)


@login_required
@require_POST
def move(request: HttpRequest, pk: int, move: str) -> HttpResponse:
    """Make one lifecycle move on a node (start, retry, abort, skip, break/fix, ...)."""
    node = get_object_or_404(Node, pk=pk)
    form = MoveForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"{node.serial}: {form.errors.as_text()}")
        return _back(node)
    try:
        done = moves.perform(
            move,
            node,
            request.user,
            reason=form.cleaned_data["reason"],
            phase=form.cleaned_data["phase"],
        )
    except moves.MoveRefused as exc:
        messages.error(request, f"{node.serial}: {exc}")
    else:
        messages.success(request, f"{node.serial}: {done}.")
    return _back(node)


@login_required
@require_POST
def approve_passed(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve every node of the rack whose gates all passed: one click, one decision each."""
    rack = get_object_or_404(Rack, pk=pk)
    made = decisions.approve_all_passed(rack, request.user)
    if made:
        messages.success(request, f"Approved {len(made)} node(s) of {rack.name} into service.")
    else:
        messages.warning(
            request, f"No node of {rack.name} passed every gate and awaits approval: none approved."
        )
    return redirect("console:rack", pk=rack.pk)


# The banner an upload's verdict gets: output that could not be judged is an error, not a success.
UPLOAD_MESSAGE_LEVELS: dict[str, int] = {
    Verdict.PASS: messages.SUCCESS,
    Verdict.FAIL: messages.WARNING,
    Verdict.ERROR: messages.ERROR,
}


class UploadForm(forms.Form):
    tool = forms.ChoiceField(choices=[(t, t) for t in sorted(PARSERS)])
    output = forms.CharField(required=False, widget=forms.Textarea, strip=False)
    file = forms.FileField(required=False)


@login_required
@require_POST
def upload(request: HttpRequest, pk: int) -> HttpResponse:
    """Take a manual tool run's output for a node (pasted or as a file) and judge it."""
    node = get_object_or_404(Node, pk=pk)
    form = UploadForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, f"Upload refused: {form.errors.as_text()}")
        return _back(node)
    upload = form.cleaned_data["file"]
    text = upload.read().decode(errors="replace") if upload else form.cleaned_data["output"]
    try:
        result = upload_output(node, form.cleaned_data["tool"], text, actor=request.user)
    except UploadRefused as exc:
        messages.error(request, f"Upload refused: {exc}")
        return _back(node)
    detail = result.metrics.get("error") or f"{len(result.findings)} finding(s)"
    messages.add_message(
        request,
        UPLOAD_MESSAGE_LEVELS.get(result.verdict, messages.INFO),
        f"{node.serial}: {form.cleaned_data['tool']} output {result.verdict} ({detail})",
    )
    return _back(node)


@login_required
@require_POST
def audit(request: HttpRequest, pk: int) -> HttpResponse:
    """Run the drift audit (a dry run of the pipeline) on a node; the result is an event."""
    if not request.user.has_perm("fleet.start_run"):
        raise PermissionDenied("you are not allowed to audit nodes")
    node = get_object_or_404(Node, pk=pk)
    try:
        report = drift_audit.audit_node(node, actor=request.user)
    except Exception as exc:  # noqa: BLE001 - an unreachable BMC is a message, not a 500
        messages.error(request, f"{node.serial}: drift audit failed: {exc}")
        return _back(node)
    summary = report.as_dict()
    drifted = ", ".join(str(c.get("component") or c.get("phase", "?")) for c in report.drifted)
    messages.success(
        request,
        f"{node.serial}: {summary['matched']} matched, {summary['drifted']} drifted"
        + (f" ({drifted})" if drifted else "")
        + f" against {summary['manifest']}"
        + drift_audit.inventory_words(report)
        + ".",
    )
    return _back(node)
