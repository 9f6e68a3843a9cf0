# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role firewall (what roles/firewall/tasks/preflight.yml checked in Jinja).

Nothing is checked on a node whose firewall_enabled is false. The
controller's address is the role's own ``firewall_controller_addresses``
(firewall_controller_sources, else SSH_CLIENT of the node's ``env`` facts,
which must be read without become: sudo drops SSH_CLIENT). The SSH port
(firewall_ssh_port) is the cluster contract's and its rule names it
(cluster.py, the SSH entry of cluster_services). Last, the node's ruleset is
computed as the role computes it (plugin_utils/firewall.py, filter
lockstep.gpu.firewall_rules), so what the role would refuse when it writes
/etc/nftables.conf (a source of every address, an NFS client '*', a node
address that is not an address) is named before any node changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate
from ansible_collections.lockstep.gpu.plugins.plugin_utils.firewall import Refused, ruleset
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import where_enabled
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# Derived values of roles/firewall/vars/main.yml (the controller's addresses, every node's address) and
# the contract's service table, rendered as the role renders them; the connection's type and port.
VARIABLES: tuple[str, ...] = ("firewall_controller_addresses", "firewall_node_addresses", "cluster_services",
                              "ansible_connection", "ansible_port")

# The connection that needs no SSH rule for the controller (the action sees the plugin's load name).
LOCAL = ("local", "ansible.builtin.local")
SOURCE_LISTS = ("firewall_allowed_sources", "firewall_ssh_sources", "firewall_controller_sources")
# A rule's comment, written between double quotes (tasks/preflight.yml's why pattern; \r as the ruleset's).
_NOTE = re.compile(r'[^"\\\n\r]{0,100}')

CONTROLLER = ("empty, and the node sees no SSH_CLIENT on this run's connection, so the firewall cannot allow the "
              "controller first: set firewall_controller_sources to the controller's addresses")
NO_ADDRESS = ("no address to allow (a node of firewall_cluster_group '{group}'): gather its facts (run against "
              "it, not only with --limit) or set base_node_address in its host_vars")
SOURCE = "every entry must be an IPv4 or IPv6 address or network (10.0.0.5, 10.0.0.0/24, fd00::/64), not a name"
EXTRA_PORT = ("each entry needs port (1-65535, or a range first-last), proto tcp or udp (default tcp), sources a "
              "list of addresses or networks (default: within the cluster) or any, and why a note of at most "
              "100 characters without quotes")
EXTRA_RULE = "each entry is one nftables rule, one line"


def _enabled(ctx, host) -> bool:
    return ctx.var(host, "firewall_enabled") is True


def _written(ctx, host, name: str) -> list:
    """The variable's entries as the inventory wrote them (the spec turned 5 into '5'), else as converted."""
    converted = ctx.var(host, name)
    raw = ctx.raw.get(host, {}).get(name)
    if isinstance(raw, list) and isinstance(converted, list) and len(raw) == len(converted):
        return raw
    return converted if isinstance(converted, list) else []


def _controller(ctx, host):
    """'Refuse a firewall that would not know the controller's address' (a local connection needs none)."""
    if not ctx.has(host, "firewall_controller_addresses") or ctx.var(host, "ansible_connection") in LOCAL:
        return
    if not ctx.var(host, "firewall_controller_addresses"):
        yield Problem("firewall_controller_sources", ctx.var(host, "firewall_controller_sources", []),
                      CONTROLLER, host)


def _is_network(value) -> bool:
    try:
        validate.network(value)
    except validate.Invalid:
        return False
    return True


def _sources(ctx, host):
    """'Refuse a source that is not an address or a network' (the spec has made every entry a string)."""
    for name in SOURCE_LISTS:
        for value in _written(ctx, host, name):
            if not _is_network(value):
                yield Problem(name, value, SOURCE, host)


def _port_ok(port) -> bool:
    """1-65535 or first-last with first <= last (an int, or its digits as a string)."""
    try:
        validate.port_range(port)
    except validate.Invalid:
        return False
    return True


def _entry_ok(entry) -> bool:
    """One firewall_extra_ports entry as tasks/preflight.yml took it (the spec defaulted proto, set None)."""
    if not isinstance(entry, Mapping) or "port" not in entry or not _port_ok(entry["port"]):
        return False
    if entry.get("proto") not in (None, "tcp", "udp"):
        return False
    sources = entry.get("sources")
    if sources is not None and sources != "any" and not (
            isinstance(sources, list) and all(_is_network(source) for source in sources)):
        return False
    why = entry.get("why")
    return why is None or (isinstance(why, str) and _NOTE.fullmatch(why) is not None)


def _extra_ports(ctx, host):
    """'Refuse an extra port that is not a port or a range, a protocol other than tcp and udp, or bad sources'."""
    for entry in _written(ctx, host, "firewall_extra_ports"):
        if not _entry_ok(entry):
            yield Problem("firewall_extra_ports", entry, EXTRA_PORT, host)


def _extra_rules(ctx, host):
    """'Refuse an extra rule that is not one line of text'."""
    for rule in _written(ctx, host, "firewall_extra_rules"):
        if not isinstance(rule, str) or "\n" in rule or "\r" in rule:
            yield Problem("firewall_extra_rules", rule, EXTRA_RULE, host)


def _node_addresses(ctx):
    """'Refuse a cluster node without an address': each once, on that node (every node's view is the same)."""
    missing: list[str] = []
    for host in ctx.hosts:
        addresses = ctx.var(host, "firewall_node_addresses")
        group = ctx.var(host, "firewall_cluster_group")
        if not _enabled(ctx, host) or not isinstance(addresses, Mapping) or not isinstance(group, str):
            continue
        for name in ctx.groups.get(group, ()):
            if not addresses.get(name) and name not in missing:
                missing.append(name)
                yield Problem("base_node_address", addresses.get(name, ""), NO_ADDRESS.format(group=group), name)


def _usable(services) -> list | None:
    """The contract's table less the services whose port is not a port or a range (the contract's rules name
    those), so that the rest is still judged; None when it is not a table of mappings."""
    if not isinstance(services, list) or not all(isinstance(service, Mapping) for service in services):
        return None
    return [service for service in services if "port" not in service or _port_ok(service["port"])]


# The checks of the ruleset's inputs: where one refuses a value, the ruleset is not computed
# (it would name the same value again).
_INPUTS = (_controller, _sources, _extra_ports, _extra_rules)
_RULESET_INPUTS = ("cluster_services", "firewall_node_addresses", "firewall_controller_addresses",
                   "firewall_cluster_group", "firewall_allowed_sources", "firewall_allow_world",
                   "firewall_ssh_sources", "firewall_extra_ports", "firewall_extra_rules", "firewall_ssh_port")


def _ruleset(ctx, host):
    """The node's nftables rules as the role computes them (vars/main.yml's firewall_ruleset)."""
    services = _usable(ctx.var(host, "cluster_services"))
    if not all(ctx.has(host, name) for name in _RULESET_INPUTS) or services is None:
        return
    if any(any(check(ctx, host)) for check in _INPUTS):
        return
    controller_port = ctx.var(host, "ansible_port", ctx.var(host, "firewall_ssh_port"))
    if not ctx.has(host, "ansible_port") and not _port_ok(controller_port):
        return  # firewall_ssh_port: the contract's rules name it
    # As written: the spec's None for an unset proto, sources or why is no value the role passes.
    extra_ports = [{key: value for key, value in entry.items() if value is not None}
                   for entry in ctx.var(host, "firewall_extra_ports")]
    try:
        ruleset(services, host, ctx.var(host, "firewall_node_addresses"),
                list(ctx.groups.get(ctx.var(host, "firewall_cluster_group"), ())),
                allowed_sources=ctx.var(host, "firewall_allowed_sources"),
                allow_world=ctx.var(host, "firewall_allow_world"),
                ssh_sources=ctx.var(host, "firewall_ssh_sources"),
                controller_sources=ctx.var(host, "firewall_controller_addresses"),
                controller_port=controller_port,
                extra_ports=extra_ports, extra_rules=ctx.var(host, "firewall_extra_rules"))
    except Refused as refused:
        yield from refused.problems
    except (TypeError, ValueError, AttributeError, KeyError) as error:  # a table no rule foresaw
        yield Problem("cluster_services", "", f"the firewall's rules could not be computed ({error})", host)


RULES = (*where_enabled("firewall_enabled", _INPUTS), _node_addresses,
         *where_enabled("firewall_enabled", (_ruleset,)))
