"""Boot credentials: the one secret that earns an agent its session.

Greenlight mints one per run for the ephemeral environment and puts it only into the boot medium
it made for that node (the per-node ISO's kernel command line, or the per-node iPXE script); for
the installed OS, os_install hands one to the agent, which writes it into the install record on
the boot disk. Serial and MACs, which anyone with a DCIM token can read, earn nothing.

One redemption per boot that Greenlight ordered (Ironic's agent-token rule: a token is issued
once, and a second lookup is refused until the conductor itself reboots the node). A credential
is armed when Greenlight orders a boot it serves (`arm_for_boot`) and disarmed by the boot's
check-in; a second redemption before the next ordered boot is someone else holding the secret,
or the node rebooting on its own, and `redeem` says so (`CredentialContested`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Least
from django.utils import timezone

from common.prepared_reads import PreparedRead
from fleet.models import Node

from ..choices import ACTIVE_RUN_STATUSES, AgentEnvironment
from ..models import BootCredential, Run
from ..site_work import node_plane_urls
from .media import format_kernel_args


def derive(message: str) -> str:
    """A secret derived from the server's key and `message` (tokens and credentials alike)."""
    digest = hmac.new(settings.SECRET_KEY.encode(), message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def derive_token(node_id: int, boot_id: str, nonce: str) -> str:
    """An agent session's token: derived from the server's key, never stored."""
    return derive(f"greenlight-agent:{node_id}:{boot_id}:{nonce}")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def derive_secret(node_id: int, nonce: str) -> str:
    """The credential's secret: derived from the server's key, so it is never stored."""
    return derive(f"greenlight-boot:{node_id}:{nonce}")


def secret_of(credential: BootCredential) -> str:
    return derive_secret(credential.node_id, credential.nonce)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# A command parameter naming a host credential by id: the secret itself is put in only when the
# agent's poll takes the command, so no secret is ever stored in a command row.
HOST_CREDENTIAL_ID = "host_credential_id"
HOST_CREDENTIAL = "host_credential"


def with_secrets(params: dict) -> dict:
    """A command's params as the agent gets them: a credential id replaced by its secret."""
    credential_id = params.get(HOST_CREDENTIAL_ID)
    if credential_id is None:
        return params
    credential = BootCredential.objects.filter(pk=credential_id, revoked_at__isnull=True).first()
    delivered = {k: v for k, v in params.items() if k != HOST_CREDENTIAL_ID}
    delivered[HOST_CREDENTIAL] = secret_of(credential) if credential else ""
    return delivered


def _mint(node: Node, run: Run | None, environment: str) -> BootCredential:
    nonce = secrets.token_hex(16)
    return BootCredential.objects.create(
        node=node,
        run=run,
        environment=environment,
        nonce=nonce,
        secret_hash=hash_secret(derive_secret(node.pk, nonce)),
        media_key=secrets.token_urlsafe(24),
    )


def ephemeral_credential(run: Run) -> BootCredential:
    """The run's ephemeral credential, minted on its first boot into the ephemeral environment.

    Every reboot of the run into the same medium presents the same credential; it dies with the
    run (see `redeem`).
    """
    live = BootCredential.objects.filter(
        run=run, environment=AgentEnvironment.EPHEMERAL, revoked_at__isnull=True
    )
    # Every boot path after the first finds it (a run reboots into the ephemeral environment
    # after each firmware update): a plain read, no lock and no transaction.
    existing = live.first()
    if existing is not None:
        return existing
    with transaction.atomic():
        # The run's row lock makes two first boots mint one credential between them.
        Run.objects.select_for_update().filter(pk=run.pk).values_list("pk").first()
        return live.first() or _mint(run.node, run, AgentEnvironment.EPHEMERAL)


def mint_host_credential(node: Node, run: Run | None) -> tuple[BootCredential, str]:
    """A new credential for the node's installed OS; older ones are revoked with the old OS."""
    with transaction.atomic():
        BootCredential.objects.filter(
            node=node, environment=AgentEnvironment.HOST_OS, revoked_at__isnull=True
        ).update(revoked_at=timezone.now())
        credential = _mint(node, run, AgentEnvironment.HOST_OS)
    return credential, secret_of(credential)


class CredentialNotArmed(Exception):
    """A live credential presented with no boot ordered since it was made or last redeemed."""

    def __init__(self, credential: BootCredential) -> None:
        super().__init__(f"no boot of {credential.node_id} was ordered for this credential")
        self.credential = credential


class CredentialContested(CredentialNotArmed):
    """A second boot redeemed the credential after the boot Greenlight ordered had done so."""


# Ordered boots a credential may be redeemed for before one checks in: a reset repeated while
# the first is slow boots the node twice, and both boots are Greenlight's.
MAX_BOOTS_ARMED = 3


def arm_for_boot(node_id: int, environments: Iterable[str] | None = None, *, boots: int = 1) -> int:
    """Greenlight is about to boot the node: its live credentials for `environments` (all when
    None) may each be redeemed `boots` times more. Called before the reset, so a quick boot
    finds it armed; a reset that then fails leaves a redemption open, at most MAX_BOOTS_ARMED.
    How many credentials were armed."""
    live = BootCredential.objects.filter(node_id=node_id, revoked_at__isnull=True)
    if environments is not None:
        live = live.filter(environment__in=list(environments))
    # Bounded: a reset the BMC accepted but never carried out must not stockpile redemptions.
    return live.update(boots_armed=Least(F("boots_armed") + boots, MAX_BOOTS_ARMED))


def live_credentials(secret_hash: str) -> QuerySet[BootCredential]:
    """The live credential whose secret hashes to `secret_hash` (none or one), with its node,
    rack and run."""
    return BootCredential.objects.select_related("node__rack", "run").filter(
        secret_hash=secret_hash, revoked_at__isnull=True
    )


def redeem(
    secret: str,
    environment: str,
    boot_id: str = "",
    *,
    find: Callable[[str], BootCredential | None] | None = None,
) -> BootCredential | None:
    """The live credential this secret is, for this environment, redeemed by boot `boot_id`;
    None if it is no such thing. CredentialNotArmed when no ordered boot awaits it,
    CredentialContested when another boot already redeemed it since Greenlight's last boot.
    `find` reads live_credentials' one for a secret's hash in its own way (a check-in reads
    the node's facts with it, in the same query)."""
    if not secret:
        return None
    secret_hash = hash_secret(secret)
    credential = find(secret_hash) if find else live_credentials(secret_hash).first()
    if credential is None or credential.environment != environment:
        return None
    if credential.run is not None and credential.environment == AgentEnvironment.EPHEMERAL:
        if credential.run.status not in ACTIVE_RUN_STATUSES:
            return None
    if boot_id and credential.redeemed_boot == boot_id[:64]:
        # The boot that redeemed it asks again (its answer was lost): the check-in refuses a
        # second token for one boot on its own, and no other boot's redemption is spent.
        return credential
    now = timezone.now()
    # One conditional update: of two boots racing for one arming, exactly one wins.
    taken = BootCredential.objects.filter(pk=credential.pk, boots_armed__gt=0).update(
        boots_armed=F("boots_armed") - 1, used_at=now, redeemed_boot=boot_id[:64]
    )
    if taken:
        credential.used_at, credential.redeemed_boot = now, boot_id
        return credential
    credential.refresh_from_db(fields=["boots_armed", "used_at", "redeemed_boot"])
    if credential.used_at is None:
        raise CredentialNotArmed(credential)
    raise CredentialContested(credential)


def contest(credential: BootCredential) -> int:
    """Trust neither boot of a contested credential: it is revoked (its medium serves nothing
    more) and so are the sessions it earned. How many sessions ended."""
    now = timezone.now()
    with transaction.atomic():
        type(credential).objects.filter(pk=credential.pk).update(revoked_at=now, boots_armed=0)
        return credential.sessions.filter(revoked_at__isnull=True).update(revoked_at=now)


def by_media_key(media_key: str) -> BootCredential | None:
    """The live ephemeral credential whose boot medium is named `media_key`."""
    credential = (
        BootCredential.objects.select_related("node", "run")
        .filter(
            media_key=media_key,
            environment=AgentEnvironment.EPHEMERAL,
            revoked_at__isnull=True,
            run__status__in=ACTIVE_RUN_STATUSES,
        )
        .first()
    )
    return credential


# The iPXE script's read, compiled once a thread: every boot's firmware asks for its script, and
# building and compiling this queryset (three joins, two pattern lookups) was most of the
# answer's CPU. The database narrows the live credentials to nodes whose MAC list holds the text
# (in either separator); the caller confirms the exact MAC. Reading every live credential's node
# instead cost a fleet-sized read per request: 741 nodes powering on together timed the fetches
# out. The MACs are expressions, so they reach the compiled query as they are (the database
# escapes the pattern's wildcards itself).
ARMED_EPHEMERAL_BY_MAC = PreparedRead(
    lambda colon, dash: (
        BootCredential.objects.select_related("node", "run__manifest")
        .filter(
            Q(node__mac_addresses__icontains=Value(colon))
            | Q(node__mac_addresses__icontains=Value(dash)),
            environment=AgentEnvironment.EPHEMERAL,
            boots_armed__gt=0,
            revoked_at__isnull=True,
            run__status__in=ACTIVE_RUN_STATUSES,
        )
        .order_by("-created_at")
    )
)


def ephemeral_for_mac(mac: str) -> BootCredential | None:
    """The armed, unredeemed ephemeral credential of the node that owns `mac` (the iPXE
    script's lookup): a script carries a credential only while the boot it serves awaits it."""
    wanted = normalise_mac(mac)
    if not wanted:
        return None
    for credential in ARMED_EPHEMERAL_BY_MAC.all(wanted, wanted.replace(":", "-")):
        if wanted in {normalise_mac(m) for m in credential.node.mac_addresses}:
            return credential
    return None


def normalise_mac(mac: str) -> str:
    text = str(mac).strip().lower().replace("-", ":")
    parts = text.split(":")
    if len(parts) != 6 or not all(
        len(p) == 2 and all(c in "0123456789abcdef" for c in p) for p in parts
    ):
        return ""
    return text


def kernel_args(credential: BootCredential) -> str:
    """The words the ephemeral kernel's command line needs to find and join Greenlight (its
    site's own node plane where it has one)."""
    return format_kernel_args(
        {
            "greenlight.url": node_plane_urls(credential.node_id)[0],
            "greenlight.credential": secret_of(credential),
            "greenlight.environment": credential.environment,
        }
    )


def live_media_keys() -> set[str]:
    """The media keys of every live ephemeral credential (their ISOs are still wanted)."""
    live = BootCredential.objects.filter(
        environment=AgentEnvironment.EPHEMERAL,
        revoked_at__isnull=True,
        run__status__in=ACTIVE_RUN_STATUSES,
    )
    return set(live.values_list("media_key", flat=True))
