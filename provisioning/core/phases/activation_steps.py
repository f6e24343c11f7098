"""The activation a firmware phase sends (an aux power cycle, an AC power cycle, a manager
reset), written so that a worker stopping around its POST neither loses it nor sends it twice.

The ACTIVATING stage is saved with the request marked not sent, the POST goes out, and the
mark is set once the BMC has answered. A look that finds the mark unset cannot tell from its
own row whether the POST left: `reset_sign` asks the device, which shows a reset it took.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from django.utils import timezone

from ...choices import Stage
from ...redfish import PowerState, activation
from ...redfish.activation import Activation
from ...redfish.errors import BmcBusy, BmcUnreachable
from ..phase_state import ActivationRequest
from .base import PhaseContext

# Node seconds in which a device that took an activation shows a reset (a GB200 BMC drops
# within seconds of its aux power cycle, a switch tray with its AC), and the looks meanwhile:
# a request with no sign by then never reached the BMC.
GRACE_S = 120.0
GRACE_LOOK_S = 15.0


def request(ctx: PhaseContext, how: Activation) -> None:
    """Save ACTIVATING with the request not yet sent, send it, mark it sent."""
    power = ctx.bmc().power_state()
    # A power the BMC could not tell is no baseline: a later reading would look like a change.
    before = "" if power == PowerState.UNKNOWN else str(power)
    asked = ActivationRequest(how=how.value, sent=False, power_before=before)
    ctx.set_stage(Stage.ACTIVATING, resume=asked.into(ctx.record.resume))
    _send(ctx, asked)


def resend(ctx: PhaseContext, asked: ActivationRequest) -> None:
    """The one second try, on a fresh stage clock: the wait for the cycle counts from it."""
    again = replace(asked, resent=True, sent=False)
    ctx.set_stage(Stage.ACTIVATING, resume=again.into(ctx.record.resume))
    _send(ctx, again)


def mark_sent(ctx: PhaseContext, asked: ActivationRequest) -> None:
    """Record that the BMC has the request (it answered, or the device shows the reset)."""
    ctx.record.resume = replace(asked, sent=True).into(ctx.record.resume)
    ctx.save_fields("resume")


def reset_sign(
    ctx: PhaseContext, asked: ActivationRequest, runs_new_image: Callable[[], bool]
) -> str | None:
    """What shows the device took the request since the stage began, or None: its BMC not
    answering, its power or its manager's LastResetTime (activation.sign_of_reset), or the
    new image running."""
    since = timezone.now() - (ctx.record.stage_started_at or timezone.now())
    try:
        sign = activation.sign_of_reset(ctx.bmc(), asked.power_before, since)
        if sign is None and runs_new_image():
            sign = "it runs the new image"
    except (BmcUnreachable, BmcBusy):
        sign = "its BMC does not answer"
    return sign


def _send(ctx: PhaseContext, asked: ActivationRequest) -> None:
    activation.activate(ctx.bmc(), Activation(asked.how))
    mark_sent(ctx, asked)
