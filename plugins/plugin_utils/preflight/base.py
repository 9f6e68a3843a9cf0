# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role base (what roles/base/tasks/preflight.yml checked in Jinja).

The node's tzdata and glibc's list of locales come from the probe's answer
(``paths``, ``read``); the distribution and default routes from the facts.
Types (base_timezone a string, the lists lists of strings) are the argument
spec's, checked by the engine before these rules run. base_in_container is
no check: tasks/facts.yml notes it when the role runs. The apt repository
key checks (apt_repo's tasks_from: check) stay in Jinja.
"""

from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.lockstep.gpu.plugins.filter.network import node_addresses
from ansible_collections.lockstep.gpu.plugins.module_utils.redact import redact_urls
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# Derived values of roles/base/vars/main.yml the rules read (the role's own tables, not copies): the
# supported releases and the node's release as the role names it. The /etc/hosts switch and group are
# the cluster contract's (roles/cluster: defaults and spec), not in base's spec; base_node_address and
# ansible_host are what node_addresses reads of each node.
VARIABLES: tuple[str, ...] = ("base_supported_releases", "base_release", "base_manage_etc_hosts",
                              "base_etc_hosts_group", "base_node_address", "ansible_host")

ZONEINFO = "/usr/share/zoneinfo/"
SUPPORTED = "/usr/share/i18n/SUPPORTED"
# A zone is a name under /usr/share/zoneinfo, never a path out of it ('.' is not allowed, so no '..':
# ../../../etc/passwd would make /etc/localtime a link to /etc/passwd).
_ZONE = re.compile(r"[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*")
ZONE_MAX = 64
# deb822 sources and chrony.conf: a space or control character would start a field or line of its own.
_NOT_A_WORD = re.compile(r"[\x00-\x20\x7f]")
# apt takes a list entry as one package: "vim; reboot" or "vim git" would fail mid-converge.
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+(:[a-z0-9-]+)?(=[A-Za-z0-9.+~:*-]+)?")
_MIRROR = re.compile(r"(https?|file)://\S+")

ZONE_NAME = ("not a timezone name: names such as Etc/UTC, Asia/Shanghai or America/Argentina/Buenos_Aires "
             "(letters, digits, _ + - and /, no '..', at most 64 characters)")
ZONE_UNKNOWN = ("not a timezone known to tzdata on the node; use a zone of /usr/share/zoneinfo "
                "such as Etc/UTC, Asia/Shanghai or Europe/Berlin")
LOCALE = ("not in the node's /usr/share/i18n/SUPPORTED, so glibc cannot generate it "
          "(e.g. en_US.UTF-8, zh_CN.UTF-8, C.UTF-8)")
MIRROR = ("not a usable apt mirror URL; allowed: http://, https:// or file:// URLs "
          "(or empty for the node's own sources)")
WORDS = {"base_apt_components": "an entry is one word (an archive component such as main), "
                                "without spaces, newlines or other control characters",
         "base_ntp_servers": "an entry is one word (a host name or address), "
                             "without spaces, newlines or other control characters"}
PACKAGE = ("not a Debian package name; allowed: lower-case letters, digits and + - . "
           "(optionally :arch and =version), one package per entry")
NO_ADDRESS = ("the node has no address for /etc/hosts: gather its facts (run against it, not only with --limit) "
              "or set base_node_address in its host_vars")


def _probe(ctx, host) -> dict:
    answer = ctx.probe(host)
    return answer if isinstance(answer, dict) else {}


def _zone_name(value) -> bool:
    return isinstance(value, str) and len(value) <= ZONE_MAX and _ZONE.fullmatch(value) is not None


def _manages_etc_hosts(ctx, host) -> bool:
    """base_manage_etc_hosts | bool, and a group name to look up (the cluster role's spec checks both)."""
    # Templated, not converted by base's spec: "yes" or "true" from -e is still a string here.
    manage = boolean(ctx.var(host, "base_manage_etc_hosts"), strict=False)
    return manage and isinstance(ctx.var(host, "base_etc_hosts_group"), str)


def probe(ctx, host) -> dict:
    """glibc's locales, and the zone's file (only for a zone name: never a path out of zoneinfo)."""
    request = {"read": [SUPPORTED]}
    zone = ctx.var(host, "base_timezone")
    if ctx.has(host, "base_timezone") and _zone_name(zone):
        # os.path.exists('<file>/') is False (ENOTDIR), True for a directory: Europe is no zone.
        request["paths"] = [ZONEINFO + zone, ZONEINFO + zone + "/"]
    return request


def _supported_release(ctx):
    """'Refuse an unsupported distribution' (base_supported_releases of vars/main.yml)."""
    for host in ctx.hosts:
        supported = ctx.var(host, "base_supported_releases")
        distribution, release = ctx.fact(host, "distribution"), ctx.var(host, "base_release")
        if not isinstance(supported, dict) or not isinstance(distribution, str) or not ctx.has(host, "base_release"):
            continue  # no facts, or the role's table could not be templated
        releases = supported.get(distribution)
        if isinstance(releases, (list, tuple)) and str(release) in [str(r) for r in releases]:
            continue
        listed = "; ".join(f"{name} {', '.join(str(r) for r in known)}" for name, known in supported.items()
                           if isinstance(known, (list, tuple)))
        yield Problem("distribution", f"{distribution} {release}", f"role base supports {listed}", host)


def _mirror_urls(ctx):
    """'Refuse a mirror URL that apt cannot use' (empty: the node's own sources)."""
    for host in ctx.hosts:
        for variable in ("base_apt_mirror", "base_apt_security_mirror"):
            value = ctx.var(host, variable)
            if not ctx.has(host, variable) or not value:
                continue
            if not isinstance(value, str) or not _MIRROR.fullmatch(value):
                # A mirror URL may carry a user and password: never echoed back.
                yield Problem(variable, redact_urls(value), MIRROR, host)


def _timezone_name(ctx):
    """'Refuse a timezone that is not a zone name'."""
    for host in ctx.hosts:
        if ctx.has(host, "base_timezone") and not _zone_name(ctx.var(host, "base_timezone")):
            # As written: the spec turned [Etc/UTC] into the string "['Etc/UTC']".
            written = ctx.raw.get(host, {}).get("base_timezone", ctx.var(host, "base_timezone"))
            yield Problem("base_timezone", written, ZONE_NAME, host)


def _list_words(ctx):
    """'Refuse list values with control characters or spaces' (deb822 sources, chrony.conf)."""
    for host in ctx.hosts:
        for variable, allowed in WORDS.items():
            values = ctx.var(host, variable)
            for value in values if isinstance(values, list) else ():
                if _NOT_A_WORD.search(str(value)):
                    yield Problem(variable, str(value), allowed, host)


def _package_names(ctx):
    """'Refuse package entries that are not Debian package names'."""
    for host in ctx.hosts:
        for variable in ("base_packages", "base_extra_packages"):
            values = ctx.var(host, variable)
            for value in values if isinstance(values, list) else ():
                if not isinstance(value, str) or not _PACKAGE.fullmatch(value):
                    yield Problem(variable, value, PACKAGE, host)


def _etc_hosts_group(ctx):
    """'Refuse an /etc/hosts group the inventory does not have' (when base_manage_etc_hosts)."""
    for host in ctx.hosts:
        group = ctx.var(host, "base_etc_hosts_group")
        if _manages_etc_hosts(ctx, host) and group not in ctx.groups:
            known = ", ".join(sorted(name for name in ctx.groups if name != "ungrouped"))
            yield Problem("base_etc_hosts_group", group, f"not a group of the inventory; allowed: {known}", host)


def _timezone_known(ctx):
    """'Refuse an unknown timezone': the zone's file exists in the node's tzdata and is no directory."""
    for host in ctx.hosts:
        zone = ctx.var(host, "base_timezone")
        found = _probe(ctx, host).get("paths")
        if not _zone_name(zone) or not isinstance(found, dict) or ZONEINFO + zone not in found:
            continue  # not a name (_timezone_name says so), or not probed
        if found[ZONEINFO + zone] is not True or found.get(ZONEINFO + zone + "/") is True:
            yield Problem("base_timezone", zone, ZONE_UNKNOWN, host)


def _locale_supported(ctx):
    """'Refuse a locale glibc does not support' (a node without the file is not judged, as in Jinja)."""
    for host in ctx.hosts:
        text = (_probe(ctx, host).get("read") or {}).get(SUPPORTED) if ctx.has(host, "base_locale") else None
        if not isinstance(text, str):
            continue
        # Each line: "<locale> <charset>", e.g. "en_US.UTF-8 UTF-8".
        names = {line.split()[0] for line in text.splitlines() if line.split()}
        locale = ctx.var(host, "base_locale")
        if not isinstance(locale, str) or locale not in names:
            yield Problem("base_locale", locale, LOCALE, host)


def _hostvars(ctx, nodes) -> dict:
    """What node_addresses reads of each node, from the engine's values and facts."""
    hostvars = {}
    for name in nodes:
        route = ctx.fact(name, "default_ipv4")
        hostvars[name] = {"base_node_address": ctx.var(name, "base_node_address"),
                          "ansible_host": ctx.var(name, "ansible_host"),
                          "ansible_facts": {"default_ipv4": route if isinstance(route, dict) else {}}}
    return hostvars


def _node_addresses(ctx):
    """'Refuse a cluster node without a known address' (the cluster contract's rule, filter node_addresses)."""
    missing: list[str] = []
    for host in ctx.hosts:
        if not _manages_etc_hosts(ctx, host):
            continue
        # Only nodes the engine has values for: one outside the play (--limit) is unknown here, not addressless.
        nodes = [name for name in ctx.groups.get(ctx.var(host, "base_etc_hosts_group")) or () if name in ctx.values]
        for name, address in node_addresses(nodes, _hostvars(ctx, nodes)).items():
            if not address and name not in missing:
                missing.append(name)
    for name in missing:
        yield Problem("base_node_address", "", NO_ADDRESS, name)


RULES = (_supported_release, _mirror_urls, _timezone_name, _list_words, _package_names, _etc_hosts_group,
         _timezone_known, _locale_supported, _node_addresses)
