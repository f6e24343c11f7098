"""Tests of the REST API, metrics, webhooks, CSV export and DCIM sync."""
