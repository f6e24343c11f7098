#!/usr/bin/env python
"""Django's command-line utility for Greenlight."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")
    from common import lab_mode

    # The demo, the lab and the benchmarks start their own Redis and keys (common/lab_mode.py),
    # before the settings are read; so does any command run with GREENLIGHT_LAB_MODE=1.
    if lab_mode.lab_mode() or (len(sys.argv) > 1 and sys.argv[1] in lab_mode.LAB_COMMANDS):
        lab_mode.prepare()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
