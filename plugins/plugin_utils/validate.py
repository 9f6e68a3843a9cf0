# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Values that reach a configuration file, checked by type and range.

One function per kind of value that Lockstep writes into a file another
program parses (nftables.conf, ganesha.conf, /etc/exports, slurm.conf,
unit files): a port, a port range, an address or network, a host name, an
NFS client, a one-line token. Each returns the value in its canonical form
or raises :class:`Invalid` with a sentence saying what is allowed; none
accepts a value that could carry a second statement into the file (a space,
a newline, a quote, a brace, a semicolon).

The preflight's rules (plugins/plugin_utils/preflight/) call these to name
every bad value before anything changes; the filters that render files call
them again, so that a value the preflight never saw (a role run alone, an
extra var) is refused where it would be written instead of pasted in.
"""

from __future__ import annotations

import ipaddress
import re

# What a port range looks like: first-last (nftables' and Slurm's form).
_RANGE = re.compile(r"^([0-9]{1,5})-([0-9]{1,5})$")
# RFC 1123 host names: labels of letters, digits and '-', not starting or
# ending with '-', at most 63 characters each, 253 in all.
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
# Tokens, passwords, keys: printable ASCII without white space, quotes,
# backslashes or shell/config metacharacters.
_TOKEN = re.compile(r"^[A-Za-z0-9._~+/=:@%-]+$")


class Invalid(ValueError):
    """A value that is not of its kind; str() says what the kind allows."""


def _whole(value, what: str) -> int:
    if isinstance(value, bool):
        raise Invalid(f"{what}: a whole number, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,5}", value):
        return int(value)
    raise Invalid(f"{what}: a whole number")


def port(value) -> int:
    """A TCP or UDP port, 1 to 65535 (an int, or a string of digits)."""
    number = _whole(value, "a port is a whole number from 1 to 65535")
    if not 1 <= number <= 65535:
        raise Invalid("a port is a whole number from 1 to 65535")
    return number


def port_range(value, low: int = 1) -> tuple[int, int]:
    """first-last with low <= first <= last <= 65535, or one port (first == last)."""
    allowed = f"a port ({low} to 65535) or a range first-last with {low} <= first <= last <= 65535, e.g. 60001-63000"
    if isinstance(value, str):
        found = _RANGE.match(value)
        if found:
            first, last = int(found.group(1)), int(found.group(2))
            if low <= first <= last <= 65535:
                return first, last
            raise Invalid(allowed)
    try:
        single = port(value)
    except Invalid:
        raise Invalid(allowed) from None
    if single < low:
        raise Invalid(allowed)
    return single, single


def ports_overlap(first: tuple[int, int], second: tuple[int, int]) -> bool:
    """Do two (first, last) ranges share a port?"""
    return first[0] <= second[1] and second[0] <= first[1]


def render_ports(span: tuple[int, int]) -> str:
    """(6817, 6817) -> '6817'; (60001, 63000) -> '60001-63000'."""
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"


def network(value) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """An IPv4 or IPv6 address or network (10.0.0.5, 10.0.0.0/24, fd00::/64), host bits allowed."""
    allowed = "an IPv4 or IPv6 address or network such as 10.0.0.5, 10.0.0.0/24 or fd00::/64"
    if not isinstance(value, str) or not re.fullmatch(r"[0-9A-Fa-f.:]+(/[0-9]{1,3})?", value):
        raise Invalid(allowed)
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise Invalid(allowed) from None


def address(value) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """One IPv4 or IPv6 address, no prefix, no port."""
    allowed = "one IPv4 or IPv6 address such as 10.0.0.5 or fd00::5 (no port, no prefix)"
    if not isinstance(value, str) or not re.fullmatch(r"[0-9A-Fa-f.:]+", value):
        raise Invalid(allowed)
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise Invalid(allowed) from None


def is_world(value) -> bool:
    """Does this source or client stand for every address (*, 0.0.0.0/0, ::/0)?"""
    if value == "*":
        return True
    try:
        return network(value).prefixlen == 0
    except Invalid:
        return False


def hostname(value) -> str:
    """An RFC 1123 host name (dp1, nas1.example.com)."""
    allowed = "a host name: labels of letters, digits and '-' separated by dots, at most 253 characters"
    if not isinstance(value, str) or len(value) > 253 or not value:
        raise Invalid(allowed)
    if not all(_LABEL.match(label) for label in value.rstrip(".").split(".")):
        raise Invalid(allowed)
    return value


def host(value) -> str:
    """An address or a host name: where a service listens or a client connects from."""
    try:
        return str(address(value))
    except Invalid:
        pass
    try:
        return hostname(value)
    except Invalid:
        raise Invalid("an IPv4 or IPv6 address or a host name (no port, no spaces)") from None


def nfs_client(value, world: bool = False) -> str:
    """An NFS export client: an address, a network or a host name; * and /0 only when world."""
    allowed = "an address, a network (10.0.0.0/24) or a host name"
    if is_world(value):
        if world:
            return str(value)
        raise Invalid(f"{allowed}; '*' and /0 export to every address and need shared_storage_export_world: true")
    try:
        return str(network(value))
    except Invalid:
        pass
    try:
        return hostname(value)
    except Invalid:
        raise Invalid(allowed) from None


def source(value, world: bool = False) -> str:
    """A firewall source: an address or network; every address (/0) only when world."""
    if is_world(value) and value != "*" and not world:
        raise Invalid("an address or a network of the cluster's; 0.0.0.0/0 and ::/0 open to every address"
                      " and need firewall_allow_world: true")
    if value == "*":
        raise Invalid("an IPv4 or IPv6 address or network such as 10.0.0.5 or 10.0.0.0/24 ('*' is not one)")
    return str(network(value))


def token(value, minimum: int = 1) -> str:
    """A secret or token written into a file: printable ASCII, no white space, quotes or backslashes."""
    allowed = (f"at least {minimum} characters of letters, digits and . _ ~ + / = : @ % - "
               "(no white space, newline, quote or backslash)")
    if not isinstance(value, str) or len(value) < minimum or not _TOKEN.match(value):
        raise Invalid(allowed)
    return value


def short(value, width: int = 60) -> str:
    """The value as an admin wrote it, cut to width (a 200 kB value is not echoed back)."""
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."
