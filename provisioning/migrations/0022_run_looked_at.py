from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("provisioning", "0021_run_safety_net"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="looked_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
