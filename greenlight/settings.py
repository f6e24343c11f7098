"""Greenlight's one settings module. Every knob comes from the environment, read strictly.

The variables are documented in docs/operators-guide.md, "Environment variables". A value the
readers (common/env.py) cannot take falls back to its default and fails `manage.py check`.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF, UNSAFE_INLINE

from common import database_url, redis_sentinel
from common.env import env_addresses, env_bool, env_float, env_int, env_list, env_str
from common.lab_mode import embedded_redis_url, lab_mode, read_generated_secret, var_dir

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = var_dir()
# A demo, lab, benchmark or test process (common/lab_mode.py): only there may secrets and
# Redis be left out of the environment, and only there does the lab app load. Importing this
# module starts and writes nothing; the lab-mode entry points do that before they import it.
GREENLIGHT_LAB_MODE = lab_mode()

# Empty in production when unset: common/checks.py names the missing variable.
SECRET_KEY = env_str("SECRET_KEY") or (
    read_generated_secret("SECRET_KEY", VAR_DIR) if GREENLIGHT_LAB_MODE else ""
)
# Key for BMC passwords at rest (Fernet); separate from SECRET_KEY so rotating one does not
# make every stored BMC password unreadable.
FIELD_ENCRYPTION_KEY = env_str("FIELD_ENCRYPTION_KEY") or (
    read_generated_secret("FIELD_ENCRYPTION_KEY", VAR_DIR) if GREENLIGHT_LAB_MODE else ""
)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc as static files: the docs load no CDN
    "channels",
    "axes",  # login throttling for the pages and the admin
    "common",  # its system checks (common/checks.py)
    "fleet",
    "provisioning",
    "acceptance",
    "console",  # pages, live view, REST API: on top of the three above
]
if GREENLIGHT_LAB_MODE:
    INSTALLED_APPS.append("lab")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its lockout page.
    "axes.middleware.AxesMiddleware",
]

# The node plane (greenlight/node_wsgi.py) answers agents and boot firmware only: no session,
# login, message, frame or CSP to look after, and no URL but theirs. CommonMiddleware stays for
# the Host check against ALLOWED_HOSTS, which nothing else on that path would make.
GREENLIGHT_NODE_PLANE = env_bool("GREENLIGHT_NODE_PLANE", False)
NODE_PLANE_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]
if GREENLIGHT_NODE_PLANE:
    MIDDLEWARE = list(NODE_PLANE_MIDDLEWARE)

if env_str("GREENLIGHT_QUERY_LOG_DIR"):
    # The benchmark counts the web server's queries too.
    MIDDLEWARE.insert(0, "common.instrumentation.QueryCountMiddleware")

ROOT_URLCONF = "greenlight.node_urls" if GREENLIGHT_NODE_PLANE else "greenlight.urls"
ASGI_APPLICATION = "greenlight.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {
        # Several hosts (a primary and its standbys) are libpq's: database_url says how.
        "default": database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "greenlight.sqlite3",
        }
    }
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL lets the web server read while a worker writes; IMMEDIATE takes the write lock at
    # BEGIN so concurrent writers queue (up to the timeout) instead of failing mid-transaction.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    # Tests with a real worker need the test database on disk, not in memory; one file per
    # test session, so two sessions on one machine never share it.
    DATABASES["default"]["TEST"] = {"NAME": VAR_DIR / f"test_greenlight_{os.getpid()}.sqlite3"}
# Connections a process pools, PostgreSQL only; set on the web server (daphne). Under ASGI a
# request's sync code does not keep its thread's connection, so "persistent" connections were a
# new PostgreSQL connection per request: a tenth of the web server's CPU in the 741-node benchmark,
# every agent check-in and command result among them. Django's advice for ASGI is a pool.
DB_POOL_SIZE = env_int("GREENLIGHT_DB_POOL", 0, minimum=0)
if DATABASES["default"]["ENGINE"].endswith("postgresql") and DB_POOL_SIZE > 0:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # connections go back to the pool after a request
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DB_POOL_SIZE),
        "max_size": DB_POOL_SIZE,
        "timeout": 30,
    }
# PostgreSQL parses and plans a statement once per connection, not once per query: psycopg's
# prepared statements, which need server-side binding (both off in Django by default, for
# connection poolers that cannot keep them). Measured on this machine for the engine's reads and
# its claim: PostgreSQL's CPU 0.47 -> 0.16 ms a query, the client's 0.86 -> 0.70 ms; in the
# 150-node benchmark PostgreSQL's CPU 0.68 -> 0.49 s a node (docs/benchmarks.md). Turn it off
# behind a pooler in transaction mode that does not keep prepared statements (PgBouncer before
# 1.21, or without max_prepared_statements).
DB_PREPARED_STATEMENTS = env_bool("GREENLIGHT_DB_PREPARED_STATEMENTS", True)
if DATABASES["default"]["ENGINE"].endswith("postgresql") and DB_PREPARED_STATEMENTS:
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        # psycopg's own default: a statement is prepared on its fifth use by the connection.
        server_side_binding=True,
        prepare_threshold=5,
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Parallel test processes (pytest-xdist) share one Redis: each gets its own channel prefix and
# Celery queue so their messages never cross.
_TEST_WORKER = env_str("PYTEST_XDIST_WORKER")

# In lab mode the entry point has started the embedded Redis at this address (lab_mode.prepare).
REDIS_URL = env_str("REDIS_URL") or (embedded_redis_url(VAR_DIR) if GREENLIGHT_LAB_MODE else "")
# Redis behind Sentinel (failover): the sentinels as host:port,host:port and the master's name.
# Set, they replace REDIS_URL for the broker, the channel layer and the cache.
REDIS_SENTINELS = env_addresses("REDIS_SENTINELS")
REDIS_SENTINEL_MASTER = env_str("REDIS_SENTINEL_MASTER", "greenlight")
REDIS_DB = env_int("REDIS_DB", 0, minimum=0)

# A live consumer waits for messages with a 5 s blocking pop (channels_redis), and redis-py's
# default socket timeout is also 5 s: on a busy machine the pop's empty answer came a moment
# after the client gave up, and the consumer died with "Timeout reading from Redis" (every rack
# of the 741-node benchmark lost its live view). The read timeout must outlast the pop.
LIVE_REDIS_SOCKET_TIMEOUT_S = env_float("GREENLIGHT_LIVE_REDIS_TIMEOUT_S", 30.0, above=0)
CHANNEL_LAYERS = {
    "default": {
        # channels_redis, with a send to many groups in two round trips (fleet/channel_layer.py).
        "BACKEND": "fleet.channel_layer.LiveChannelLayer",
        "CONFIG": {
            "hosts": [
                redis_sentinel.channel_layer_host(
                    REDIS_SENTINELS,
                    REDIS_SENTINEL_MASTER,
                    REDIS_DB,
                    socket_timeout=LIVE_REDIS_SOCKET_TIMEOUT_S,
                )
                if REDIS_SENTINELS
                else {"address": REDIS_URL, "socket_timeout": LIVE_REDIS_SOCKET_TIMEOUT_S}
            ],
            "prefix": env_str("CHANNEL_PREFIX", "greenlight" + _TEST_WORKER),
            # Every socket of one web process shares one Redis list, and a send to a list over
            # capacity is dropped with no more than an INFO log: at the default 100, a busy web
            # process lost rack updates in a 741-node run, and those nodes stayed stale on the
            # page until their next change (minutes later). A message is a few hundred bytes.
            "capacity": env_int("GREENLIGHT_LIVE_CAPACITY", 5000, minimum=1),
        },
    }
}

# The cache is shared by every process: counts of refused requests (fleet/refusals.py) must add
# up across web processes, or a flood spread over them would write a row per process.
CACHES: dict[str, dict[str, object]] = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": env_str("CHANNEL_PREFIX", "greenlight" + _TEST_WORKER),
    }
}
if REDIS_SENTINELS:
    CACHES["default"]["LOCATION"] = redis_sentinel.sentinel_location(
        REDIS_SENTINELS, REDIS_SENTINEL_MASTER, REDIS_DB
    )
    CACHES["default"]["OPTIONS"] = {"pool_class": "common.redis_sentinel.SentinelPool"}

# Kombu spells a unix-socket Redis (the embedded one) "redis+socket://"; redis-py says "unix://".
_REDIS_BROKER_URL = (
    "redis+socket://" + REDIS_URL.removeprefix("unix://")
    if REDIS_URL.startswith("unix://")
    else REDIS_URL
)
if REDIS_SENTINELS:
    _REDIS_BROKER_URL = redis_sentinel.broker_url(REDIS_SENTINELS, REDIS_DB)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", _REDIS_BROKER_URL)
CELERY_TASK_IGNORE_RESULT = True  # task history lives in our own models (runs, phase records)
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 4
# Celery's Django fixup closes the database connection before and after every task unless this
# is set: every engine step then paid a new PostgreSQL connection (a server process, TLS/auth,
# session set-up), the largest single cost of a worker in the 741-node benchmark. With it, a
# thread's connection is reused and recycled every 2 x N tasks; CONN_MAX_AGE still applies.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 500, minimum=0)
# Redis hands a message not acknowledged within this many seconds to another worker: a task sent
# with a longer countdown is redelivered each time it passes (Celery #5935, #2599, #5306).
_VISIBILITY_TIMEOUT_S = env_int("CELERY_VISIBILITY_TIMEOUT", 600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": _VISIBILITY_TIMEOUT_S}
if REDIS_SENTINELS:
    CELERY_BROKER_TRANSPORT_OPTIONS["master_name"] = REDIS_SENTINEL_MASTER
# The longest countdown a task is sent with, in wall seconds. A look due further ahead is only its
# row (Run.next_look_at) until the sweep sends it; at most half the visibility timeout, so that a
# message's countdown and its wait in a busy queue together stay under it.
GREENLIGHT_MAX_COUNTDOWN_S = env_float(
    "GREENLIGHT_MAX_COUNTDOWN_S",
    min(60.0, _VISIBILITY_TIMEOUT_S / 2),
    above=0,
    maximum=_VISIBILITY_TIMEOUT_S / 2,
)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "greenlight" + _TEST_WORKER)
# Wall seconds between sweeps. No longer than the longest countdown: the sweep sends the looks
# that come within it, so a sweep less often than that would send them late.
GREENLIGHT_SWEEP_SECONDS = env_float(
    "GREENLIGHT_SWEEP_SECONDS",
    min(30.0, GREENLIGHT_MAX_COUNTDOWN_S),
    above=0,
    maximum=GREENLIGHT_MAX_COUNTDOWN_S,
)
CELERY_BEAT_SCHEDULE = {
    "sweep-lost-runs": {"task": "provisioning.tasks.sweep", "schedule": GREENLIGHT_SWEEP_SECONDS},
}
# Exactly one beat sends the periodic tasks, however many are started: each holds a lease row in
# the database to send (common/beat_lease.py), renewed on its ticks; a second waits for it to lapse.
CELERY_BEAT_SCHEDULER = "common.beat_lease:LeasedScheduler"
# Wall seconds a beat's lease lasts unless renewed: how long a dead beat's periodic tasks wait.
GREENLIGHT_BEAT_LEASE_S = env_float("GREENLIGHT_BEAT_LEASE_S", 30.0, minimum=3)

AUTHENTICATION_BACKENDS = [
    # First, so that a locked-out username and address is refused before a password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (django-axes), for the login page and the admin alike: after this many wrong
# passwords for one username from one address, that pair is refused for the cool-off, even with
# the right password, and the lockout is logged ("AXES: Locked out"). The username and address
# together, so an attacker cannot lock a person out from elsewhere. API tokens are not throttled.
AXES_FAILURE_LIMIT = env_int("GREENLIGHT_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("GREENLIGHT_LOGIN_COOLOFF_MINUTES", 15.0, above=0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The lockout log names the username and address (axes masks both by default): that is what an
# operator acts on. Passwords are always masked.
AXES_SENSITIVE_PARAMETERS: list[str] = []

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
# The demo serves static files from the ASGI app itself; production puts them behind a proxy.
SERVE_STATIC = env_bool("SERVE_STATIC", True)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Model permissions, view_* for reads: a role's API rights are its Django permissions.
    "DEFAULT_PERMISSION_CLASSES": ["common.api.permissions.ModelPermissions"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "common.api.pagination.CursorPagination",
    # A body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 (Django would answer 400).
    "EXCEPTION_HANDLER": "common.api.exceptions.exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "common.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Greenlight API",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        # "channels over capacity" is a slow browser tab, not news for the log at INFO.
        "channels_redis": {"level": "WARNING"},
        "axes.apps": {"level": "WARNING"},  # its start-up banner, in every process
    },
}

# --- Served over TLS, security headers ------------------------------------------------------

# Content-Security-Policy (django-csp): scripts, styles, images and sockets from this origin only.
# Inline style attributes stay allowed: progress bars set their width in the template.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],  # the live view's WebSocket: same origin, ws: or wss:
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# The browser-facing site is served over HTTPS (by this server or a TLS proxy in front): cookies
# become Secure, HSTS is sent and plain-HTTP page requests are redirected.
GREENLIGHT_HTTPS = env_bool("GREENLIGHT_HTTPS", False)
# Behind a TLS-terminating proxy, the header it sets to say the client used HTTPS, e.g.
# X-Forwarded-Proto. Set it only when the proxy always sets (or strips) that header itself.
_PROXY_SSL_HEADER = env_str("GREENLIGHT_PROXY_SSL_HEADER")
if _PROXY_SSL_HEADER:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
SESSION_COOKIE_SECURE = GREENLIGHT_HTTPS
CSRF_COOKIE_SECURE = GREENLIGHT_HTTPS
SECURE_SSL_REDIRECT = GREENLIGHT_HTTPS
# Nodes' agents and Prometheus may speak plain HTTP on the management network: a redirect would
# turn their POSTs into GETs.
SECURE_REDIRECT_EXEMPT = [r"^agent/", r"^metrics$", r"^boot/"]
# Read (and checked) with or without HTTPS, so that setting it early is not an unknown variable.
_HSTS_SECONDS = env_int("GREENLIGHT_HSTS_SECONDS", 31_536_000, minimum=0)
SECURE_HSTS_SECONDS = _HSTS_SECONDS if GREENLIGHT_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("GREENLIGHT_HSTS_INCLUDE_SUBDOMAINS", True)
# Preload only asks browsers' preload lists to take the domain if its owner submits it.
SECURE_HSTS_PRELOAD = env_bool("GREENLIGHT_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Greenlight's own knobs -------------------------------------------------------------------

# How fast Greenlight's clock runs against the wall: 1 in production; the lab sets the same
# factor as its own time scale so that a 20-minute phase limit is 20 lab minutes.
GREENLIGHT_TIME_SCALE = env_float("GREENLIGHT_TIME_SCALE", 1.0, above=0)
# Lab mode only (a check refuses it elsewhere): a file the lab writes the wall-clock time into, so
# that a test shuts a maintenance window mid-rollout and opens the next (provisioning/clock.py).
GREENLIGHT_WALL_CLOCK_FILE = env_str("GREENLIGHT_WALL_CLOCK_FILE")
# The agent API's base URL as a node sees it: it goes into every boot medium Greenlight makes.
# https in production, with the CA that signed its certificate baked into the ephemeral image.
GREENLIGHT_AGENT_URL = env_str("GREENLIGHT_AGENT_URL", "http://127.0.0.1:8000")
# The base URL BMCs and iPXE fetch per-node boot media from (virtual-media ISOs, iPXE scripts).
GREENLIGHT_BOOT_MEDIA_URL = env_str("GREENLIGHT_BOOT_MEDIA_URL", GREENLIGHT_AGENT_URL)
# Where per-node ISOs are built and cached (each holds its node's boot credential).
GREENLIGHT_BOOT_MEDIA_DIR = Path(env_str("GREENLIGHT_BOOT_MEDIA_DIR", str(VAR_DIR / "boot-media")))
# Where `python -m bootimage build --out` put the boot images Greenlight serves (/boot/v1/images/).
GREENLIGHT_BOOT_IMAGE_DIR = Path(env_str("GREENLIGHT_BOOT_IMAGE_DIR", str(VAR_DIR / "boot-images")))
# Wall seconds between an agent's polls for commands: while its node has an active run, and idle.
GREENLIGHT_AGENT_POLL_S = env_float("GREENLIGHT_AGENT_POLL_S", 2.0, above=0)
GREENLIGHT_AGENT_IDLE_POLL_S = env_float("GREENLIGHT_AGENT_IDLE_POLL_S", 30.0, above=0)
# The polls a second the fleet's agents that expect no command soon make together, at most: past
# it their intervals stretch (up to the longest one an agent is told anyway). 100 is about a
# tenth of a core of the agents' API; 741 agents keep it with the intervals above.
GREENLIGHT_AGENT_POLLS_PER_S = env_float("GREENLIGHT_AGENT_POLLS_PER_S", 100.0, above=0)
# The agent API answers only requests that came over TLS (directly, or through a proxy that says
# so by GREENLIGHT_PROXY_SSL_HEADER): a boot credential and a session token are secrets. The lab's
# simulated nodes talk plain HTTP on loopback.
GREENLIGHT_AGENT_REQUIRE_TLS = env_bool("GREENLIGHT_AGENT_REQUIRE_TLS", not GREENLIGHT_LAB_MODE)
# Nodes of one rack powered on at the same time (spares the PDUs).
GREENLIGHT_POWER_ON_BATCH = env_int("GREENLIGHT_POWER_ON_BATCH", 4, minimum=1)
GREENLIGHT_TRANSIENT_BUDGET = env_int("GREENLIGHT_TRANSIENT_BUDGET", 12, minimum=0)
GREENLIGHT_FAILURE_BUDGET = env_int("GREENLIGHT_FAILURE_BUDGET", 2, minimum=0)
# The scheduler adapter that drains nodes before a wipe: "slurm" or "kubernetes"; "lab" (whose
# drain calls nothing) is the default only in lab mode. Unset in production is a check error:
# a wipe must never follow a drain that did not happen.
GREENLIGHT_SCHEDULER = env_str("GREENLIGHT_SCHEDULER", "lab" if GREENLIGHT_LAB_MODE else "")
# Coalescing window for live updates to browsers, in milliseconds: at most one message per socket
# per window. The page fetches what changed one request at a time however many batches come, so
# a short window costs the browser nothing and the operator sees a change sooner.
GREENLIGHT_LIVE_COALESCE_MS = env_int("GREENLIGHT_LIVE_COALESCE_MS", 100, minimum=0)
# How often a Celery worker's threads hand over the interpreter lock, in milliseconds (Python's
# default is 5). A worker's live-update publisher is one thread among a dozen busy ones: each
# time it wakes it waits its turn, and a shorter turn is a shorter wait.
GREENLIGHT_WORKER_SWITCH_INTERVAL_MS = env_float(
    "GREENLIGHT_WORKER_SWITCH_INTERVAL_MS", 1.0, above=0
)
# Allocations between two collections of the young generation in a worker or a web server, whose
# start-up objects are frozen out of the collector (common/gc_tuning.py says why; Python's is 700).
GREENLIGHT_GC_YOUNG_THRESHOLD = env_int("GREENLIGHT_GC_YOUNG_THRESHOLD", 10_000, minimum=100)

# --- API, metrics, webhooks and DCIM sync (see docs/api.md) -------------------------------------

# Bearer token Prometheus must send to /metrics; empty means /metrics is open (scraped from the
# management network, like most exporters).
METRICS_TOKEN = env_str("METRICS_TOKEN")
# Bearer token Alertmanager may send to /api/v1/alertmanager/ instead of a user's API token
# (its webhook_config `authorization: {credentials: ...}`); empty: only users' tokens are taken.
GREENLIGHT_ALERTMANAGER_TOKEN = env_str("GREENLIGHT_ALERTMANAGER_TOKEN")
# Receivers of a signed POST on every node state change, and the HMAC-SHA256 key that signs it.
GREENLIGHT_WEBHOOK_URLS = env_list("GREENLIGHT_WEBHOOK_URLS", [])
GREENLIGHT_WEBHOOK_SECRET = env_str("GREENLIGHT_WEBHOOK_SECRET")
# 24 retries, their backoff capped at GREENLIGHT_MAX_COUNTDOWN_S (fleet/webhooks.py): a receiver
# is tried for about 21 minutes before a delivery is dropped.
GREENLIGHT_WEBHOOK_MAX_RETRIES = env_int("GREENLIGHT_WEBHOOK_MAX_RETRIES", 24, minimum=0)
# NetBox push sync: scheduled only when both are set.
GREENLIGHT_NETBOX_URL = env_str("GREENLIGHT_NETBOX_URL")
GREENLIGHT_NETBOX_TOKEN = env_str("GREENLIGHT_NETBOX_TOKEN")
GREENLIGHT_NETBOX_MANUFACTURER = env_str("GREENLIGHT_NETBOX_MANUFACTURER", "Generic")
_NETBOX_SYNC_SECONDS = env_float("GREENLIGHT_NETBOX_SYNC_SECONDS", 900.0, above=0)
if GREENLIGHT_NETBOX_URL and GREENLIGHT_NETBOX_TOKEN:
    CELERY_BEAT_SCHEDULE["dcim-sync-netbox"] = {
        "task": "console.tasks.netbox_sync",
        "schedule": _NETBOX_SYNC_SECONDS,
    }
# Real seconds an open BMC session waits in a worker's pool for the next step of that node;
# 0 turns pooling off (every step logs in and out). A BMC whose own SessionTimeout is shorter
# closes it first, which costs a login at the next step (provisioning/redfish/pool.py says why
# 1,800).
GREENLIGHT_BMC_SESSION_IDLE_S = env_float("GREENLIGHT_BMC_SESSION_IDLE_S", 1800.0, minimum=0)
# Wall seconds a worker holds a run while taking one step; past it, another worker may take over.
GREENLIGHT_STEP_LEASE_S = env_float("GREENLIGHT_STEP_LEASE_S", 120.0, above=0)
# Wall seconds a phase is given at the least, whatever its limit on a scaled clock: what a phase
# waits on (a process restart, a TLS handshake, a queue's lag) takes real seconds at any scale.
GREENLIGHT_PHASE_MIN_REAL_S = env_float("GREENLIGHT_PHASE_MIN_REAL_S", 60.0, minimum=0)
# A deployment's runs start only while the workers keep up (provisioning/admission.py): while
# the oldest look due waits less than this many wall seconds for a worker; the others wait queued
# and the sweep admits up to GREENLIGHT_ADMISSION_BATCH of them a sweep, oldest first.
GREENLIGHT_ADMISSION_LAG_S = env_float("GREENLIGHT_ADMISSION_LAG_S", 30.0, above=0)
GREENLIGHT_ADMISSION_BATCH = env_int("GREENLIGHT_ADMISSION_BATCH", 50, minimum=1)
# At most this many runs under way at once, as Ironic's max_concurrent_deploy (0: no cap; the
# lag above already holds a deployment to what the workers take).
GREENLIGHT_MAX_RUNS_IN_FLIGHT = env_int("GREENLIGHT_MAX_RUNS_IN_FLIGHT", 0, minimum=0)
# Wall seconds past a run's due look before the sweep re-sends it.
GREENLIGHT_SWEEP_GRACE_S = env_float("GREENLIGHT_SWEEP_GRACE_S", 30.0, minimum=0)
