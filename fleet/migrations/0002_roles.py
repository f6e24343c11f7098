from django.db import migrations

from fleet.roles import sync_roles


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0001_initial"),
        ("provisioning", "0001_initial"),
        ("acceptance", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(sync_roles, migrations.RunPython.noop)]
