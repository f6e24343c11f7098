"""The test session's entry point to the settings: lab mode first, then the one settings module.

pytest-django imports the settings before any conftest runs, so the session's generated keys and
embedded Redis (common/lab_mode.py) are prepared here, before greenlight.settings reads them.
Processes the tests start inherit this module through DJANGO_SETTINGS_MODULE.
"""

from common import lab_mode

lab_mode.prepare()

from greenlight.settings import *  # noqa: E402, F403
