"""The official MCP Python SDK (mcp==2.3.0) against the demo as an OAuth resource server.

Usage:
  python oauth_client.py URL ISSUER ADMIN_TOKEN GUEST_TOKEN EXPIRED_TOKEN

Run by tests/http/oauth.rs against `fusion-demo --http 0 --oauth-issuer ISSUER`, with tokens the
test authorization server minted for the audience URL.

- Discovery as the SDK's OAuth client does it: a request without a token gets 401, the
  SDK's own parser finds `resource_metadata` in `WWW-Authenticate`, the document validates
  as the SDK's RFC 9728 model, its resource covers URL, its authorization server is ISSUER,
  and ISSUER's RFC 8414 metadata is found at the URL the SDK builds and names ISSUER.
- An admin and a guest, in two sessions at the same time: `db_user` `find_many` answers
  the admin and refuses the guest; both may use `system`.
- An expired token cannot even initialize.

Prints one "ok: ..." line per check; on the first failure prints "FAIL: ..." to stderr and
exits 1. Every wait is bounded.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import ClientSession, MCPError
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

STEP_TIMEOUT = 20.0
"""Seconds allowed for any single request or handshake."""

T = TypeVar("T")

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "oauth-client", "version": "0"},
    },
}


class CheckFailed(Exception):
    """A check did not hold; the message says which and what was seen."""


def ok(what: str) -> None:
    print(f"ok: {what}", flush=True)


def check(condition: bool, what: str, seen: Any = None) -> None:
    if not condition:
        raise CheckFailed(f"{what}; got: {seen!r}")
    ok(what)


async def step(what: str, awaitable: Awaitable[T]) -> T:
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            return await awaitable
    except TimeoutError:
        raise CheckFailed(f"timed out after {STEP_TIMEOUT:.0f} s waiting for {what}") from None


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def discovery(url: str, issuer: str) -> None:
    async with httpx2.AsyncClient(timeout=STEP_TIMEOUT) as http:
        refused = await step(
            "POST without a token",
            http.post(
                url,
                json=INITIALIZE,
                headers={"Accept": "application/json, text/event-stream"},
            ),
        )
        check(refused.status_code == 401, "no token: 401", refused.status_code)
        pointer = extract_resource_metadata_from_www_auth(refused)
        check(pointer is not None, "the SDK finds resource_metadata in WWW-Authenticate", refused.headers)
        urls = build_protected_resource_metadata_discovery_urls(pointer, url)
        document = await step("the metadata document", http.get(urls[0]))
        check(document.status_code == 200, "the metadata document: 200", document.status_code)
        metadata = ProtectedResourceMetadata.model_validate_json(document.content)
        ok("the document validates as the SDK's RFC 9728 model")
        check(
            check_resource_allowed(resource_url_from_server_url(url), str(metadata.resource)),
            "its resource covers the server URL",
            metadata.resource,
        )
        check(
            [str(server).rstrip("/") for server in metadata.authorization_servers] == [issuer],
            "its authorization server is the issuer",
            metadata.authorization_servers,
        )
        check(metadata.bearer_methods_supported == ["header"], "bearer in the header only", metadata)
        for candidate in build_oauth_authorization_server_metadata_discovery_urls(issuer, url):
            answer = await step("the issuer's metadata", http.get(candidate))
            if answer.status_code == 200:
                server = OAuthMetadata.model_validate_json(answer.content)
                check(str(server.issuer).rstrip("/") == issuer, "the issuer's RFC 8414 metadata names it", server)
                break
        else:
            raise CheckFailed("no RFC 8414 metadata at the URLs the SDK builds")


async def as_user(url: str, token: str, who: str, results: dict[str, Any]) -> None:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client) as (read, write):
        async with ClientSession(read, write) as session:
            init = await step(f"{who}: initialize", session.initialize())
            check(init.server_info.name == "fusion-demo", f"{who}: initialized", init.server_info)
            health = await step(f"{who}: system", session.call_tool("system", {"action": "health"}))
            check(not health.is_error, f"{who}: system health answers", text_of(health))
            results[who] = await step(
                f"{who}: db_user",
                session.call_tool("db_user", {"action": "find_many", "take": 2}),
            )


async def roles(url: str, admin: str, guest: str) -> None:
    results: dict[str, Any] = {}
    async with anyio.create_task_group() as group:
        group.start_soon(as_user, url, admin, "admin", results)
        group.start_soon(as_user, url, guest, "guest", results)
    check(not results["admin"].is_error, "admin: db_user find_many answers", text_of(results["admin"]))
    check(results["guest"].is_error is True, "guest: db_user find_many is refused", text_of(results["guest"]))


async def expired(url: str, token: str) -> None:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            async with client, streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
    except TimeoutError:
        raise CheckFailed("an expired token: the client hung instead of failing") from None
    except Exception as error:  # the SDK reports the 401 as an error of its own choosing
        leaves = leaves_of(error)
        check(
            any(isinstance(leaf, MCPError) or "401" in str(leaf) for leaf in leaves),
            "expired token: initialize fails with the server's error answer",
            " | ".join(f"{type(leaf).__name__}: {leaf}" for leaf in leaves),
        )
        return
    raise CheckFailed("an expired token initialized a session")


def leaves_of(exc: BaseException) -> list[BaseException]:
    """The exceptions inside exception groups, flattened."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves_of(inner)]
    return [exc]


async def main(url: str, issuer: str, admin: str, guest: str, expired_token: str) -> None:
    await discovery(url, issuer)
    await roles(url, admin, guest)
    await expired(url, expired_token)


def first_failure(exc: BaseException) -> BaseException:
    """The first CheckFailed inside (task groups wrap failures in exception groups)."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_failure(inner)
            if isinstance(found, CheckFailed):
                return found
        return first_failure(exc.exceptions[0]) if exc.exceptions else exc
    return exc


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(main, *sys.argv[1:6])
    except BaseException as exc:  # noqa: BLE001 - report the first real failure and exit 1
        failure = first_failure(exc)
        print(f"FAIL: {type(failure).__name__}: {failure}", file=sys.stderr)
        sys.exit(1)
    print("ok: all checks passed", flush=True)
