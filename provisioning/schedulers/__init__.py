"""Scheduler adapters: cordon and drain a node from the tenant's scheduler before a wipe.

One adapter per scheduler, chosen by settings.GREENLIGHT_SCHEDULER. Each answers three
questions the same way: cordon the node, say whether it is drained, let it back in.
"""

from __future__ import annotations

from django.conf import settings

from .base import Scheduler, SchedulerError, SchedulerUnavailable

__all__ = ["ADAPTERS", "Scheduler", "SchedulerError", "SchedulerUnavailable", "configured"]

# GREENLIGHT_SCHEDULER value -> the adapter's dotted path (imported on use).
ADAPTERS: dict[str, str] = {
    "lab": "provisioning.schedulers.lab.LabScheduler",
    "slurm": "provisioning.schedulers.slurm.SlurmScheduler",
    "kubernetes": "provisioning.schedulers.kubernetes.KubernetesScheduler",
}


def configured() -> Scheduler:
    """The adapter settings name; an unknown name is a configuration error, said plainly."""
    from django.utils.module_loading import import_string

    name = settings.GREENLIGHT_SCHEDULER
    if name not in ADAPTERS:
        raise SchedulerError(
            f"GREENLIGHT_SCHEDULER is {name!r}; expected one of {', '.join(sorted(ADAPTERS))}"
        )
    return import_string(ADAPTERS[name])()
