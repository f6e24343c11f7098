"""No lab behaviour by default in production: the environment must name what lab mode supplies.

Each check runs `manage.py` (or a bare settings import) in a fresh process with the test
session's lab mode taken out of its environment, as a production install would start.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.support.processes import ROOT

PRODUCTION_PACKAGES = (
    "fleet",
    "provisioning",
    "acceptance",
    "console",
    "greenlight",
    "agent",
    "bootimage",
)
LAB_ONLY_REQUIREMENTS = ("aiohttp", "matplotlib", "psutil")
# What lab mode supplies; a production process must be given all of it.
PRODUCTION_ENV = {
    "SECRET_KEY": "production-secret-key-" + "x" * 40,
    "FIELD_ENCRYPTION_KEY": "production-field-key-" + "y" * 40,
    "REDIS_URL": "redis://127.0.0.1:6379/15",
    "GREENLIGHT_SCHEDULER": "slurm",
}
LAB_VARIABLES = ("GREENLIGHT_LAB_MODE", "PYTEST_XDIST_WORKER", *PRODUCTION_ENV)


def production_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The test's environment without lab mode or anything lab mode supplies, plus overrides."""
    env = {k: v for k, v in os.environ.items() if k not in LAB_VARIABLES}
    env["GREENLIGHT_VAR_DIR"] = str(tmp_path / "var")
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    env["DJANGO_SETTINGS_MODULE"] = "greenlight.settings"  # not the test session's entry point
    env.update(overrides)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_without_a_scheduler_names_the_variable(tmp_path):
    env = production_env(tmp_path, **PRODUCTION_ENV)
    del env["GREENLIGHT_SCHEDULER"]
    result = manage(env, "check")
    assert result.returncode != 0
    assert "(greenlight.E004) GREENLIGHT_SCHEDULER is not set" in result.stderr
    assert "kubernetes, slurm" in result.stderr


def test_check_refuses_the_lab_scheduler_outside_lab_mode(tmp_path):
    env = production_env(tmp_path, **{**PRODUCTION_ENV, "GREENLIGHT_SCHEDULER": "lab"})
    result = manage(env, "check")
    assert result.returncode != 0
    assert "(greenlight.E006) GREENLIGHT_SCHEDULER is 'lab'" in result.stderr


def test_check_names_every_missing_secret_and_redis(tmp_path):
    result = manage(production_env(tmp_path, GREENLIGHT_SCHEDULER="slurm"), "check")
    assert result.returncode != 0
    for variable in ("SECRET_KEY", "FIELD_ENCRYPTION_KEY", "REDIS_URL"):
        assert f"{variable} is not set" in result.stderr


def test_a_configured_production_environment_passes_check_without_the_lab(tmp_path):
    env = production_env(tmp_path, **PRODUCTION_ENV)
    assert manage(env, "check").returncode == 0
    # The lab's commands are not there, and the lab app is not installed.
    assert "lab" not in manage(env, "help", "--commands").stdout.split()
    assert not (tmp_path / "var").exists()


def test_importing_the_settings_starts_and_writes_nothing(tmp_path):
    """Even in lab mode: the entry points start Redis and write keys, not the settings import."""
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.GREENLIGHT_SCHEDULER, 'lab' in settings.INSTALLED_APPS)"
    )
    for lab_mode, expected in (("", " False"), ("1", "lab True")):
        env = production_env(tmp_path, GREENLIGHT_LAB_MODE=lab_mode)
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == expected.strip()
        assert not (tmp_path / "var").exists(), "settings import created the var dir"


def test_the_demo_command_enters_lab_mode(tmp_path):
    env = production_env(tmp_path, REDIS_URL=PRODUCTION_ENV["REDIS_URL"])
    result = manage(env, "demo", "--help")
    assert result.returncode == 0, result.stderr
    assert "--no-lab" in result.stdout
    # Its entry point generated the keys the environment left out.
    assert (tmp_path / "var" / "secret_key").exists()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_production_packages_never_import_lab_only_requirements():
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for package in PRODUCTION_PACKAGES
        for path in (ROOT / package).rglob("*.py")
        for name in sorted(_imports(path) & set(LAB_ONLY_REQUIREMENTS))
    ]
    assert offenders == []


def test_lab_only_requirements_live_in_their_own_file():
    def names(filename: str) -> set[str]:
        lines = (ROOT / filename).read_text().splitlines()
        return {line.split("==")[0].lower() for line in lines if "==" in line}

    assert names("requirements.txt").isdisjoint(LAB_ONLY_REQUIREMENTS)
    assert set(LAB_ONLY_REQUIREMENTS) <= names("requirements-lab.txt")
    assert "-r requirements-lab.txt" in (ROOT / "requirements-dev.txt").read_text()
