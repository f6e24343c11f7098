"""The shared bases' one model: a named lease, which one process at a time holds."""

from __future__ import annotations

from django.db import models


class Lease(models.Model):
    """A named lease that one process holds until `expires_at` unless it renews it.

    Taken and renewed by compare-and-set (common/leases.py); Celery beat holds one to send the
    periodic tasks (common/beat_lease.py), so a second beat started alongside sends nothing.
    """

    name = models.CharField(max_length=100)
    holder = models.CharField(max_length=200, help_text="host:pid:nonce of the holding process")
    expires_at = models.DateTimeField()
    acquired_at = models.DateTimeField(help_text="When the current holder took the lease")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name"], name="lease_unique_name")]

    def __str__(self) -> str:
        return f"lease {self.name} held by {self.holder}"
