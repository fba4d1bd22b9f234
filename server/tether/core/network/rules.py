"""Which connections a sandboxed command may open: the domain allowlist, pure (docs/network.md).

Why these checks, in this order: the proxies other agents ship were bypassed through what they let
through before comparing names — NUL bytes and odd encodings in the host, IP literals in decimal or
hex, names that resolve to loopback or the cloud metadata address, a TLS name that differs from the
CONNECT host. So a host is first normalised (or refused), then matched against the lists, then every
address it resolves to is checked, and the proxy connects only to an address it checked.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

PRESETS: dict[str, tuple[str, ...]] = {
    "pypi": ("pypi.org", "files.pythonhosted.org"),
    "npm": ("registry.npmjs.org",),
    "yarn": ("registry.yarnpkg.com", "registry.npmjs.org"),
    "crates": ("crates.io", "index.crates.io", "static.crates.io"),
    "go": ("proxy.golang.org", "sum.golang.org", "storage.googleapis.com"),
    "github": (
        "github.com",
        "codeload.github.com",
        "objects.githubusercontent.com",
        "raw.githubusercontent.com",
    ),
    "rubygems": ("rubygems.org", "index.rubygems.org"),
}
"""Named lists a user opts into with `[network] presets = ["pypi"]` (docs/network.md)."""

DEFAULT_PORTS = frozenset({80, 443})
MAX_HOST = 253
METADATA = (ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254"))
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")


@dataclass(frozen=True)
class NetworkSettings:
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allow_local_addresses: bool = False
    presets: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        """Off unless the user allowed at least one domain (by name or preset)."""
        return bool(self.allowed_domains or self.presets)

    def allowed(self) -> tuple[str, ...]:
        names = list(self.allowed_domains)
        for preset in self.presets:
            names.extend(PRESETS.get(preset, ()))
        return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    rule: str
    reason: str


def _deny(rule: str, reason: str) -> Verdict:
    return Verdict(False, rule, reason)


def normalize_host(raw: str) -> str | Verdict:
    """The host as compared (lower case, IDNA, no trailing dot), or the refusal."""
    if not raw or any(ord(c) < 0x21 or ord(c) == 0x7F for c in raw):
        return _deny("network.bad_host", f"the host {raw!r} is empty or holds control characters")
    if "%" in raw or "\\" in raw or "/" in raw or "@" in raw:
        return _deny(
            "network.bad_host", f"the host {raw!r} holds %, \\, / or @: encoded or smuggled names are refused"
        )
    host = raw[:-1] if raw.endswith(".") else raw
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1].lower()
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return _deny("network.bad_host", f"the host {raw!r} is not a valid international name (IDNA)")
    if len(ascii_host) > MAX_HOST:
        return _deny("network.bad_host", f"the host is longer than {MAX_HOST} characters")
    if _ip(ascii_host) is None and not all(_LABEL.match(label) for label in ascii_host.split(".")):
        return _deny("network.bad_host", f"the host {raw!r} is not a valid DNS name")
    return ascii_host


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def looks_numeric(host: str) -> bool:
    """`2130706433`, `0x7f.1`, `017700000001`: what resolvers read as an IPv4 address."""
    return bool(re.fullmatch(r"[0-9.]+|0x[0-9a-f.x]+|[0-9a-fx.]*\.?0x[0-9a-f]+", host))


def _matches(host: str, pattern: str) -> bool:
    pattern = pattern.lower().rstrip(".")
    name = pattern.rsplit(":", 1)[0] if _port_of(pattern) is not None else pattern
    if name.startswith("*."):
        return host.endswith(name[1:]) and host != name[2:]
    return host == name


def _port_of(pattern: str) -> int | None:
    head, sep, tail = pattern.rpartition(":")
    return int(tail) if sep and head and tail.isdigit() else None


def host_verdict(raw_host: str, port: int, settings: NetworkSettings) -> tuple[str, Verdict]:
    """The normalised host and whether its name and port may be reached (before resolving)."""
    host = normalize_host(raw_host)
    if isinstance(host, Verdict):
        return raw_host, host
    if not 0 < port < 65536:
        return host, _deny("network.port", f"port {port} is not a port")
    for pattern in settings.denied_domains:
        if _matches(host, pattern):
            return host, _deny("network.denied_domain", f"{host} is in [network] denied_domains ({pattern})")
    allowed = [p for p in settings.allowed() if _matches(host, p)]
    literal = _ip(host) is not None or looks_numeric(host)
    if not allowed:
        if literal:
            return host, _deny(
                "network.ip_literal",
                f"{host} is an IP address: only names are allowed (or list the address itself in "
                "[network] allowed_domains)",
            )
        return host, _deny(
            "network.unknown_domain",
            f"{host} is not in [network] allowed_domains: add it (or `*.{host}`) to your user config to "
            "allow it",
        )
    ports = {_port_of(p) for p in allowed} - {None}
    if port not in DEFAULT_PORTS and port not in ports and not settings.allow_local_addresses:
        return host, _deny(
            "network.port",
            f"port {port} is not allowed (80 and 443 are; name another as `{host}:{port}` in "
            "[network] allowed_domains)",
        )
    return host, Verdict(True, "network.allowed", f"{host} is in [network] allowed_domains")


def address_verdict(address: str, port: int, settings: NetworkSettings, host: str) -> Verdict:
    """Whether the proxy may connect to `address` (what `host` resolved to) on `port`."""
    ip = _ip(address.split("%", 1)[0])
    if ip is None:
        return _deny("network.bad_address", f"{host} resolved to {address!r}, not an address")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA:
        return _deny(
            "network.metadata", f"{host} resolves to the cloud metadata address {ip}: never reachable"
        )
    local = ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified or ip.is_reserved
    if ip.is_multicast:
        return _deny("network.local_address", f"{host} resolves to the multicast address {ip}")
    if local and not settings.allow_local_addresses:
        return _deny(
            "network.local_address",
            f"{host} resolves to {ip}, a local or private address (set `allow_local_addresses = true` "
            "under [network] in your user config for local servers)",
        )
    if (
        port not in DEFAULT_PORTS
        and not local
        and not any(_port_of(p) == port and _matches(host, p) for p in settings.allowed())
    ):
        return _deny("network.port", f"port {port} is not allowed for {host} (80 and 443 are)")
    return Verdict(True, "network.allowed", f"{host} ({ip}) is allowed")


def describe(settings: NetworkSettings) -> dict[str, object]:
    """For `tether doctor` and `tether explain`."""
    return {
        "enabled": settings.enabled,
        "allowedDomains": list(settings.allowed()),
        "deniedDomains": list(settings.denied_domains),
        "presets": list(settings.presets),
        "allowLocalAddresses": settings.allow_local_addresses,
    }


def unknown_presets(names: Iterable[str]) -> list[str]:
    return [n for n in names if n not in PRESETS]
