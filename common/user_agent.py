"""Who this process is, as the BMCs it calls see it: the User-Agent of its Redfish requests.

With sites (provisioning/site_work.py) a hall's BMCs must hear only that hall's workers. A BMC
logs each request's User-Agent, so the operator reading it, or a hall's firewall log beside it,
tells which hall's worker called: `Greenlight/1 (site=berlin; worker=w1@hall-b)`. A Celery
worker names itself as it starts (greenlight/celery.py); any other process (a web server,
`manage.py enroll`) names only its host.
"""

from __future__ import annotations

import re
import socket

PRODUCT = "Greenlight/1"
# What a User-Agent comment may not hold unescaped (RFC 9110 5.6.5): parentheses, backslash,
# control characters. A site's name is an operator's text.
_NOT_IN_COMMENT = re.compile(r"[()\\\x00-\x1f\x7f]")

_user_agent = ""


def name_this_worker(worker: str, site: str | None = None) -> None:
    """From now on, say that requests come from Celery worker `worker`, serving `site` if set."""
    global _user_agent
    parts = ([f"site={_clean(site)}"] if site else []) + [f"worker={_clean(worker)}"]
    _user_agent = f"{PRODUCT} ({'; '.join(parts)})"


def user_agent() -> str:
    """The User-Agent header this process sends to BMCs."""
    return _user_agent or f"{PRODUCT} (host={_clean(socket.gethostname())})"


def _clean(text: str) -> str:
    return _NOT_IN_COMMENT.sub("_", text)
