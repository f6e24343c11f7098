"""The HTTP layer under the Redfish client: auth, per-BMC concurrency cap, bounded retries, errors.

Everything that turns an HTTP exchange into plain JSON or a typed error lives here, so the
resource code above it never sees httpx.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from common import instrumentation
from common.user_agent import user_agent

from . import errors, quirks
from .tls import default_context, find_pin_mismatch, pinned_context

log = logging.getLogger(__name__)

# A BMC is a small embedded computer: a handful of parallel requests is what it serves well.
DEFAULT_MAX_CONCURRENCY = 4
_caps: dict[str, threading.BoundedSemaphore] = {}
_caps_lock = threading.Lock()


def bmc_slot(base_url: str, limit: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore capping concurrent requests to one BMC."""
    parts = urlsplit(base_url)
    key = f"{parts.hostname}:{parts.port}"
    with _caps_lock:
        if key not in _caps:
            _caps[key] = threading.BoundedSemaphore(limit)
        return _caps[key]


@dataclass
class Answer:
    """One decoded Redfish answer: status, headers that matter, and the JSON body (or None)."""

    status: int
    url: str
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @property
    def etag(self) -> str | None:
        return self.headers.get("etag") or (self.body or {}).get("@odata.etag")


class Transport:
    """One BMC connection: a reused httpx.Client, a login session, retries, typed errors."""

    def __init__(
        self,
        base_url: str,
        username: str,
        password: str,
        *,
        fingerprint: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.2,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        allow_plain_http: bool = False,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not a BMC URL: {base_url!r}")
        if parts.username or parts.password:
            raise ValueError("put BMC credentials in --username/--password, not in the URL")
        if parts.scheme == "http" and not allow_plain_http:
            raise ValueError(
                f"{base_url} is plain HTTP, which would send the BMC password unencrypted: use "
                "https, or have an admin mark this BMC as plain HTTP with a reason"
            )
        self.base_url = f"{parts.scheme}://{parts.netloc}"
        self.plain_http = parts.scheme == "http"
        # Over plain HTTP a 401 ends the conversation: the credentials are never sent again.
        self._plain_refused: errors.AuthenticationRefused | None = None
        self.username = username
        self._password = password
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        if parts.scheme == "https" and fingerprint:
            verify: Any = pinned_context(fingerprint)
        else:
            # https without a pin: ordinary CA verification; checking is never switched off.
            verify = default_context()
        self._verify = verify
        self._http = self._new_http()
        # Set by release_connections: the next request opens a connection (and client) anew.
        self._released = False
        self._slot = bmc_slot(self.base_url, max_concurrency)
        self.session_token: str | None = None
        self.session_uri: str | None = None
        self.use_basic = False
        self._sessions_path: str | None = None
        self._relogged = False
        # Set when the connection itself failed: a pooled client in this state is dropped.
        self.broken = False
        self._gated: dict[tuple[str, str], errors.ConfigurationError] = {}
        # Requests other than GET and HEAD sent so far: a held answer is good until the next.
        self.writes = 0
        # URL -> (writes when read, answer) for the URLs a `holding` block holds (None: unread).
        self._held: dict[str, tuple[int, Answer] | None] = {}

    # -- auth -------------------------------------------------------------------------------

    def login(self, sessions_path: str | None) -> None:
        """Open a session through SessionService, or fall back to basic auth if none is offered."""
        if self._plain_refused is not None:
            raise self._plain_refused  # a login would send the password over plain HTTP again
        self._sessions_path = sessions_path
        if not sessions_path:
            self.use_basic = True
            return
        try:
            answer = self.request(
                "POST",
                sessions_path,
                json={"UserName": self.username, "Password": self._password},
                auth=False,
            )
        except (errors.ResourceMissing, errors.ActionNotSupported, errors.RequestRejected):
            # Some BMCs list SessionService but do not implement it; basic auth still works.
            self.use_basic = True
            return
        token = answer.headers.get("x-auth-token")
        if not token:
            self.use_basic = True
            return
        self.session_token = token
        location = answer.location or (answer.body or {}).get("@odata.id")
        self.session_uri = self.absolute(location) if location else None

    def logout(self) -> None:
        """Delete the session (BMCs have few session slots) and close the connection pool."""
        try:
            if self.session_token and self.session_uri:
                try:
                    # A session the BMC already closed (its own idle timeout, a reboot) answers
                    # 401 or 404: logging in again only to log out would leave a new session
                    # behind, holding one of the BMC's few slots.
                    self.request("DELETE", self.session_uri, retry=False, relogin=False)
                except (errors.AuthenticationRefused, errors.ResourceMissing):
                    log.debug("session on %s already closed by the BMC", self.base_url)
                except errors.RedfishError as exc:
                    log.warning("logout from %s failed: %s", self.base_url, exc)
        finally:
            self.session_token = None
            self._http.close()

    def release_connections(self) -> None:
        """Close the open connections but keep the session: the next request connects anew
        and sends the same token. For a client that waits long between steps (a pool's)."""
        if not self._released:
            self._released = True
            self._http.close()

    @property
    def holds_connections(self) -> bool:
        """Whether connections may be open (none after release_connections until next used)."""
        return not self._released and not self._http.is_closed

    def _new_http(self) -> httpx.Client:
        # The User-Agent names the worker and its site: a hall's BMC logs show who called.
        return httpx.Client(
            timeout=self.timeout,
            verify=self._verify,
            follow_redirects=False,
            headers={"User-Agent": user_agent()},
        )

    def drop(self) -> None:
        """Close the connections without logging out (the BMC is not answering anyway)."""
        self.session_token = None
        self._http.close()

    def _auth_headers(self) -> tuple[dict[str, str], httpx.BasicAuth | None]:
        if self.session_token:
            return {"X-Auth-Token": self.session_token}, None
        return {}, httpx.BasicAuth(self.username, self._password)

    # -- requests ---------------------------------------------------------------------------

    def absolute(self, path: str) -> str:
        """A full URL for a path or URL the BMC gave."""
        return urljoin(self.base_url + "/", path)

    def get(self, path: str) -> Answer:
        """GET a resource; the body must be a JSON object. A URL a `holding` block holds is read
        again only after a write."""
        # Outside a holding block (most clients, most GETs) nothing is looked up or resolved.
        url = self.absolute(path) if self._held else None
        held = self._held.get(url) if url is not None else None
        if held is not None and held[0] == self.writes:
            return held[1]
        answer = self.request("GET", path)
        if answer.body is None:
            raise errors.NotJson(answer.url, "the BMC answered an empty body", status=answer.status)
        if url is not None and url in self._held:
            self._held[url] = (self.writes, answer)
        return answer

    @contextmanager
    def holding(self, path: str) -> Iterator[None]:
        """Within the block, a GET of `path` answers what the last one did, until a request that
        may change something (any but GET and HEAD) goes out. For a resource read several times
        around one write and never polled for a change within the block."""
        url = self.absolute(path)
        self._held[url] = None
        try:
            yield
        finally:
            self._held.pop(url, None)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        files: Any = None,
        data: Any = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        retry: bool = True,
        timeout: float | None = None,
        relogin: bool = True,
    ) -> Answer:
        """Send one request with bounded retries for 503 and dropped connections only.

        `timeout` overrides the client's for this request (an image upload takes minutes);
        `relogin` False answers a 401 on an expired session as it is, without a new login."""
        url = self.absolute(path)
        if method not in ("GET", "HEAD"):
            self.writes += 1
        if _origin(url) != _origin(self.base_url):
            # A link or Location to another origin (or from https down to http): our token or
            # password goes to this BMC only.
            raise errors.ConfigurationError(
                url, f"the BMC pointed at another origin; credentials go to {self.base_url} only"
            )
        if self._plain_refused is not None and auth:
            raise self._plain_refused
        gated = self._gated.get((method, url))
        if gated is not None:
            # A licence-gated feature stays gated: report it again without bothering the BMC.
            raise gated
        attempts = (self.retries if retry else 0) + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self._send(method, url, json, files, data, headers, auth, timeout)
            except httpx.TimeoutException:
                self.broken = True
                # Not retried: the BMC may be acting on the request; the engine decides.
                raise errors.BmcUnreachable(
                    url, f"no answer within {timeout or self.timeout:g}s (timed out)"
                ) from None
            except httpx.TransportError as exc:
                self.broken = True
                mismatch = find_pin_mismatch(exc)
                if mismatch is not None:
                    raise errors.CertificateMismatch(
                        url,
                        f"the BMC presented certificate {mismatch.presented}, "
                        f"not the pinned {mismatch.expected}",
                    ) from None
                if _is_cert_failure(exc):
                    raise errors.CertificateUntrusted(
                        url, f"certificate not trusted and no fingerprint pinned: {exc}"
                    ) from None
                # A dropped connection: a POST may already be in effect, so only a connect
                # failure (nothing was sent) is retried for it.
                retriable = method in ("GET", "HEAD", "DELETE") or isinstance(
                    exc, httpx.ConnectError
                )
                if last or not retriable:
                    raise errors.BmcUnreachable(
                        url, f"connection failed: {type(exc).__name__}: {exc}"
                    ) from None
                self._pause(attempt, None)
                self.broken = False
                continue
            if response.status_code == 503 and not last:
                self._pause(attempt, response.headers.get("retry-after"))
                continue
            if response.status_code == 401 and auth and self.plain_http:
                # No new login and no later request with credentials; _decode below raises
                # the BMC's own refusal this time.
                self.session_token = None
                self._plain_refused = errors.AuthenticationRefused(
                    url,
                    "authentication was refused over plain HTTP; the credentials are not sent "
                    "again",
                    status=401,
                )
            if (
                response.status_code == 401
                and auth
                and relogin
                and self.session_token
                and not self._relogged
            ):
                # A session can expire under us (BMC reboot, idle timeout): log in afresh once.
                self._relogged = True
                self.session_token = None
                with instrumentation.work("bmc_session:relogin"):
                    self.login(self._sessions_path)
                return self.request(
                    method,
                    path,
                    json=json,
                    files=files,
                    data=data,
                    headers=headers,
                    retry=retry,
                    timeout=timeout,
                )
            try:
                answer = self._decode(method, url, response)
            except errors.ConfigurationError as exc:
                if "licence" in exc.reason:
                    self._gated[(method, url)] = exc
                raise
            if auth:
                # Authenticated again: a later expiry may be repaired by another login.
                self._relogged = False
            return answer
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, method, url, json, files, data, headers, auth, timeout=None) -> httpx.Response:
        extra, basic = self._auth_headers() if auth else ({}, None)
        # identity: a BMC that compresses its answers may weaken their ETags (W/"..."), which
        # iLO, AMI and XCC then refuse in If-Match (quirks.QUIRK_TABLE, hpe ETag row).
        merged = {
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            **extra,
            **(headers or {}),
        }
        if self._released:
            self._released = False
            self._http = self._new_http()
        with self._slot:
            return self._http.request(
                method,
                url,
                json=json,
                files=files,
                data=data,
                headers=merged,
                auth=basic if basic is not None else httpx.USE_CLIENT_DEFAULT,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )

    def _pause(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * (2**attempt)
        if retry_after and retry_after.isdigit():
            # Honour the BMC's hint, but never sleep long: the engine reschedules long waits.
            delay = max(delay, min(float(retry_after), 2.0))
        time.sleep(delay)

    def _decode(self, method: str, url: str, response: httpx.Response) -> Answer:
        status = response.status_code
        headers = {k.lower(): v for k, v in response.headers.items()}
        if status < 400:
            body = self._parse_body(url, response) if status != 204 else None
            return Answer(status, url, body, headers)
        # The status says what went wrong; the body only adds words. A BMC whose error pages
        # are HTML (a 404 from its web server) is still "missing", never "not JSON".
        body = _error_body(response)
        message = self._scrub(_error_message(body) or response.reason_phrase or "")
        what = f"{method} answered {status}" + (f": {message}" if message else "")
        error = _status_error(url, status, what)
        error.messages = tuple(
            errors.Message(m.message_id, self._scrub(m.message), tuple(map(self._scrub, m.args)))
            for m in _extended_info(body)
        )
        raise _refined(error)

    def _parse_body(self, url: str, response: httpx.Response) -> dict[str, Any] | None:
        text = response.text
        if not text.strip():
            return None
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        looks_json = ctype.endswith("json") or text.lstrip()[:1] in "{["
        if not looks_json:
            kind = "an HTML page" if "html" in ctype or "<html" in text[:500].lower() else ctype
            raise errors.NotJson(
                url,
                f"expected JSON, the BMC answered {kind or 'an untyped body'} "
                f"(HTTP {response.status_code})",
                status=response.status_code,
            )
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise errors.InvalidJson(
                url, f"the body does not parse as JSON: {exc}", status=response.status_code
            ) from None
        if not isinstance(body, dict):
            raise errors.InvalidJson(url, "the body is JSON but not an object")
        return body

    def _scrub(self, text: str) -> str:
        """Remove the password from BMC-supplied text before it can reach a log or an event."""
        return text.replace(self._password, "***") if self._password else text


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port, the port spelled out: https://bmc and https://bmc:443 are one."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1  # a malformed port matches nothing
    return (
        parts.scheme,
        (parts.hostname or ""),
        port or {"http": 80, "https": 443}.get(parts.scheme),
    )


def _is_cert_failure(exc: BaseException) -> bool:
    current: BaseException | None = exc
    while current is not None:
        if "CERTIFICATE_VERIFY_FAILED" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _error_body(response: httpx.Response) -> dict[str, Any] | None:
    """The JSON object of an error answer, or None when it has none (HTML, plain text)."""
    try:
        body = json.loads(response.text)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _error_message(body: dict[str, Any] | None) -> str:
    """The human message of a Redfish error body, including its first extended message."""
    if not body:
        return ""
    error = body.get("error") or {}
    if not isinstance(error, dict):
        return str(error)
    parts = [str(error.get("message", ""))]
    extended = error.get("@Message.ExtendedInfo")
    # A list by the standard; some BMCs send one object, or something else entirely.
    infos = extended if isinstance(extended, list) else [extended]
    for info in infos:
        if isinstance(info, dict) and info.get("Message"):
            parts.append(str(info["Message"]))
            break
    return " ".join(p for p in parts if p).strip()


def _extended_info(body: dict[str, Any] | None) -> list[errors.Message]:
    """The error's @Message.ExtendedInfo entries (a list by the standard, one object on some)."""
    error = (body or {}).get("error")
    if not isinstance(error, dict):
        return []
    extended = error.get("@Message.ExtendedInfo")
    infos: list[Any] = extended if isinstance(extended, list) else [extended]
    found = []
    for info in infos:
        if isinstance(info, dict):
            raw_args = info.get("MessageArgs")
            args: list[Any] = raw_args if isinstance(raw_args, list) else []
            found.append(
                errors.Message(
                    str(info.get("MessageId") or ""),
                    str(info.get("Message") or ""),
                    tuple(str(a) for a in args),
                )
            )
    if error.get("code") and not any(m.message_id == error["code"] for m in found):
        found.append(errors.Message(str(error["code"]), str(error.get("message") or "")))
    return found


# MessageIds that say "try again later" in a vendor's own words (quirks.QUIRK_TABLE rows).
IN_POST = ("UnableToModifyDuringSystemPOST",)
NOT_READY = ("SYS518", "InvalidOperationForSystemState")
DELL_PENDING_JOB = ("LC068", "RAC0679", "SYS011", "SUP0108")


def _refined(error: errors.RedfishError) -> errors.RedfishError:
    """A 400 whose MessageId names a refusal with its own retry becomes its own type."""
    if not isinstance(error, errors.RequestRejected) or type(error) is not errors.RequestRejected:
        return error
    refinements: tuple[tuple[type[errors.RequestRejected], tuple[str, ...]], ...] = (
        (errors.SystemInPost, IN_POST),
        (errors.BmcNotReady, NOT_READY),
        (errors.PendingJob, DELL_PENDING_JOB),
    )
    for kind, suffixes in refinements:
        if error.has_message(*suffixes):
            refined = kind(error.url, error.reason, status=error.status, messages=error.messages)
            return refined
    return error


def _status_error(url: str, status: int, what: str) -> errors.RedfishError:
    if status == 401:
        return errors.AuthenticationRefused(url, f"authentication refused: {what}", status=status)
    if status == 403:
        if quirks.is_licence_refusal(what):
            return errors.ConfigurationError(
                url, f"licence required for this feature (not retried): {what}", status=status
            )
        return errors.ConfigurationError(url, f"forbidden: {what}", status=status)
    if status == 404:
        return errors.ResourceMissing(url, f"resource missing: {what}", status=status)
    if status in (405, 501):
        return errors.ActionNotSupported(url, f"not supported by this BMC: {what}", status=status)
    if status == 412:
        return errors.PreconditionFailed(url, f"changed since read: {what}", status=status)
    if status == 428:
        return errors.PreconditionRequired(url, f"If-Match required: {what}", status=status)
    if status == 503:
        return errors.BmcBusy(url, f"BMC busy after retries: {what}", status=status)
    if status >= 500:
        return errors.BmcError(url, f"BMC failure: {what}", status=status)
    return errors.RequestRejected(url, f"request rejected: {what}", status=status)
