"""Greenlight: the control plane that takes GPU nodes from BMC-reachable to in service."""

from .celery import app as celery_app

__all__ = ("celery_app",)
