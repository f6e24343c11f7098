"""Load the sample HGX SKU, its published manifest and acceptance profile, and a demo rack."""

from django.core.management.base import BaseCommand

from acceptance.sample_data import load_samples


class Command(BaseCommand):
    help = (
        "Create the sample 8-GPU HGX SKU, its published manifest and acceptance profile "
        "(from acceptance/samples/), and the demo site hall-1 with rack R01. Safe to run again."
    )

    def handle(self, *args, **options) -> None:
        report = load_samples()
        for label in report.created:
            self.stdout.write(f"created {label}")
        for label in report.existing:
            self.stdout.write(f"exists  {label}")
