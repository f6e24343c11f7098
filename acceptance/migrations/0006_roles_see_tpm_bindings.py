# Every role that reads the fleet reads its TPM bindings too (fleet/roles.py).

from django.db import migrations

from fleet.roles import sync_roles


class Migration(migrations.Migration):

    dependencies = [
        ("acceptance", "0005_gate_choices_from_the_gate_table"),
        ("provisioning", "0010_phase_stage_choices"),
    ]

    operations = [
        migrations.RunPython(sync_roles, migrations.RunPython.noop),
    ]
