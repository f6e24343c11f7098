"""DATABASE_URL, with PostgreSQL's several hosts: `postgres://u@h1:5432,h2:5432/db` names a
primary and its standbys, and `?target_session_attrs=read-write` makes libpq connect to
whichever of them takes writes now. After a failover (the standby promoted), the next
connection finds the new primary; dj_database_url reads one host only.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import dj_database_url


def parse(url: str, **options: Any) -> dict[str, Any]:
    """Django's DATABASES entry for `url`; several hosts become libpq's comma lists."""
    parts = urlsplit(url)
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    hosts = hostlist.split(",")
    if len(hosts) == 1:
        return dict(dj_database_url.parse(url, **options))
    first = f"{userinfo}@{hosts[0]}" if userinfo else hosts[0]
    config = dict(dj_database_url.parse(urlunsplit(parts._replace(netloc=first)), **options))
    names, ports = [], []
    for host in hosts:
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
        names.append(name)
        ports.append(port or "5432")
    config["HOST"] = ",".join(names)
    config["PORT"] = ",".join(ports)
    return config
