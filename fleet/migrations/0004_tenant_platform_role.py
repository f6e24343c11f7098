from django.db import migrations

from fleet.roles import sync_roles


class Migration(migrations.Migration):
    dependencies = [("fleet", "0003_node_last_erased_at")]

    operations = [migrations.RunPython(sync_roles, migrations.RunPython.noop)]
