"""Lab mode: what a demo, lab, benchmark or test process starts for itself, and nothing else does.

A production process reads every secret and service address from its environment, and a check
error names what is missing. A lab-mode process may leave them out: its entry point (manage.py
for `demo`, `lab` and the benchmarks, the test session's plugin) calls `prepare()` before the
settings are imported, which starts the embedded Redis and writes the generated keys. Importing
the settings themselves starts and writes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from .embedded_redis import ensure_embedded_redis
from .env import env_bool, env_str, generated_secret

LAB_MODE_VARIABLE = "GREENLIGHT_LAB_MODE"
# manage.py commands that are the lab, the demo or a benchmark: they run in lab mode.
LAB_COMMANDS = frozenset(
    {"demo", "lab", "vmlab", "bench", "bench_db", "bench_api", "bench_ui", "bench_sushy"}
    | {"bench_firmware", "bench_intake", "bench_views"}
)
# Generated in lab mode when the environment does not set them; file names under the var dir.
GENERATED_SECRETS = {"SECRET_KEY": "secret_key", "FIELD_ENCRYPTION_KEY": "field_key"}

BASE_DIR = Path(__file__).resolve().parent.parent


def var_dir() -> Path:
    """Where local state lives: the embedded Redis's socket, generated keys, the SQLite file."""
    return Path(env_str("GREENLIGHT_VAR_DIR", str(BASE_DIR / "var")))


def lab_mode() -> bool:
    """True in a demo, lab, benchmark or test process (and every process it starts)."""
    return env_bool(LAB_MODE_VARIABLE, False)


def embedded_redis_url(directory: Path) -> str:
    """The address the embedded Redis listens on under `directory`."""
    return f"unix://{directory / 'redis.sock'}"


def read_generated_secret(name: str, directory: Path) -> str:
    """The generated value of secret `name`, or "" if no entry point has generated it."""
    path = directory / GENERATED_SECRETS[name]
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def prepare() -> None:
    """Enter lab mode for this process and its children; start what the environment leaves out.

    Call before the settings are imported. Children inherit lab mode through the environment.
    """
    os.environ[LAB_MODE_VARIABLE] = "1"
    directory = var_dir()
    directory.mkdir(parents=True, exist_ok=True)
    for name, filename in GENERATED_SECRETS.items():
        if not env_str(name):
            generated_secret(directory / filename)
    if not env_str("REDIS_URL") and not env_str("REDIS_SENTINELS"):
        ensure_embedded_redis(directory)
