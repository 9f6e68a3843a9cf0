# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's firewall rules, from the cluster contract's service table.

Role firewall renders /etc/nftables.conf from what :func:`ruleset` returns
and from nothing else: every port, range and source in it has been checked
here (plugin_utils/validate.py) and written back in a canonical form, so a
value such as ``"32768-60999 accept; tcp dport 0-65535"`` or a source of
``0.0.0.0/0`` never reaches the file. Problems are collected, not raised one
by one: :class:`Refused` names every bad value of the node at once, each with
its variable.

The table is ``cluster_services`` (roles/cluster/vars/main.yml): one entry
per service port, ``{name, owner, variable, port, proto, enabled, nodes,
sources[, clients, clients_variable]}``; see that file for what each field
means.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem, fold

# The source keywords of the table.
CLUSTER, SSH, ANY = "cluster", "ssh", "any"
# What a rule's comment may hold (it is written between double quotes).
_NOTE = re.compile(r'^[^"\\\n\r]{0,100}$')
PROTOS = ("tcp", "udp")


class Refused(ValueError):
    """The node's ruleset is not written: str() names every problem, each with its variable."""

    def __init__(self, host: str, problems: list[Problem]):
        self.host = host
        self.problems = problems
        lines = [f"  - {problem.line(', '.join(n for n in nodes if n) or host)}" for nodes, problem in fold(problems)]
        count = len(lines)
        super().__init__(f"The firewall of {host} is not written (its ruleset and the loaded rules stay as they are): "
                         f"{count} problem{'s' if count != 1 else ''}:\n" + "\n".join(lines))


def _canonical(network) -> str:
    """10.0.0.5/32 -> '10.0.0.5'; 10.0.0.7/24 -> '10.0.0.0/24'; fd00::5 -> 'fd00::5'."""
    if network.prefixlen == network.max_prefixlen:
        return str(network.network_address)
    return str(network)


def _sorted(sources) -> list[str]:
    """Unique, in the order the rules have always listed them (Jinja's unique | sort)."""
    return sorted(set(sources), key=lambda text: (text.lower(), text))


class _Sources:
    """The checked sources of one node's ruleset; problems land in the shared list."""

    def __init__(self, host, addresses, cluster, allowed_sources, allow_world, problems):
        self.host = host
        self.addresses = dict(addresses or {})
        self.allow_world = bool(allow_world)
        self.problems = problems
        # World sources of firewall_allowed_sources, reported once the exposed ports are known.
        self.world_allowed: list[str] = []
        allowed = self.checked("firewall_allowed_sources", allowed_sources, world=self.allow_world, note_world=True)
        self.cluster = _sorted(self.nodes(cluster) + allowed)

    def checked(self, variable: str, values, world: bool, note_world: bool = False) -> list[str]:
        """The values of a list of addresses and networks, canonical; a problem for each other one."""
        if values is None:
            return []
        if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
            self.problems.append(Problem(variable, values, "a list of IPv4 or IPv6 addresses or networks", self.host))
            return []
        found = []
        for value in values:
            if note_world and validate.is_world(value) and not world:
                self.world_allowed.append(value)
                continue
            try:
                found.append(_canonical(validate.network(validate.source(value, world=world))))
            except validate.Invalid as error:
                self.problems.append(Problem(variable, value, str(error), self.host))
        return found

    def nodes(self, names) -> list[str]:
        """The addresses of these inventory names (nodes without one are left out)."""
        found = []
        for name in names or []:
            value = self.addresses.get(name) or ""
            if not value:
                continue
            try:
                found.append(_canonical(validate.network(value)))
            except validate.Invalid as error:
                self.problems.append(Problem("base_node_address", value, f"{error} (the address of {name})", name))
        return found

    def clients(self, variable: str, values) -> list[str]:
        """The addresses and networks among NFS-style clients; names are left out, * and /0 need the switch."""
        if not isinstance(values, (list, tuple)):
            self.problems.append(Problem(variable, values, "a list of addresses, networks or host names", self.host))
            return []
        found = []
        for value in values:
            if validate.is_world(value):
                if not self.allow_world:
                    self.problems.append(Problem(
                        variable, value, "every address: the firewall would open this service to the world; set "
                        "firewall_allow_world: true to mean it, or list the clients' networks", self.host))
                    continue
                found += ["0.0.0.0/0", "::/0"] if value == "*" else [_canonical(validate.network(value))]
                continue
            try:
                found.append(_canonical(validate.network(value)))
                continue
            except validate.Invalid:
                pass
            try:
                validate.hostname(value)  # a name: the export takes it, a firewall rule cannot
            except validate.Invalid:
                self.problems.append(Problem(variable, value, "an address, a network (10.0.0.0/24) or a host name",
                                             self.host))
        return found


def _rule(why: str, match: str, sources) -> dict:
    """{why, match, any, v4, v6}: what the template writes for one open port."""
    if sources == ANY:
        return {"why": why, "match": match, "any": True, "v4": [], "v6": []}
    v4 = [s for s in sources if ipaddress.ip_network(s, strict=False).version == 4]
    v6 = [s for s in sources if ipaddress.ip_network(s, strict=False).version == 6]
    return {"why": why, "match": match, "any": False, "v4": _sorted(v4), "v6": _sorted(v6)}


def _span(variable: str, value, problems, host: str):
    try:
        return validate.port_range(value)
    except validate.Invalid as error:
        problems.append(Problem(variable, value, str(error), host))
        return None


def _service_rules(services, host, sources: _Sources, ssh_sources, problems) -> tuple[list[dict], list[str]]:
    """The rules of the table's services this node runs, and the ports open to `cluster`."""
    rules, cluster_ports = [], []
    for index, service in enumerate(services or []):
        if not isinstance(service, dict):
            problems.append(Problem("cluster_services", service, "a mapping per service (roles/cluster/vars)", host))
            continue
        name = service.get("name")
        variable = service.get("variable") or f"cluster_services[{index}].port"
        label = name if isinstance(name, str) and _NOTE.match(name) else None
        if label is None:
            problems.append(Problem(f"cluster_services[{index}].name", name, "one line without quotes or backslashes",
                                    host))
            continue
        enabled = service.get("enabled", True)
        if not isinstance(enabled, bool):
            problems.append(Problem(f"{label}: enabled", enabled, "true or false", host))
            continue
        proto = service.get("proto", "tcp")
        if proto not in PROTOS:
            problems.append(Problem(f"{label}: proto", proto, "tcp or udp", host))
            continue
        if not enabled:
            continue
        span = _span(variable, service.get("port"), problems, host)
        if span is None or host not in (service.get("nodes") or []):
            continue
        match = f"{proto} dport {validate.render_ports(span)}"
        wanted = service.get("sources")
        if wanted == CLUSTER:
            allowed = list(sources.cluster)
            cluster_ports.append(f"{label} {validate.render_ports(span)}/{proto}")
        elif wanted == SSH:
            checked = sources.checked("firewall_ssh_sources", ssh_sources, world=True)
            allowed = checked if checked else ANY
        elif wanted == ANY:
            allowed = ANY
        elif isinstance(wanted, (list, tuple)):
            allowed = sources.nodes(wanted)
        else:
            problems.append(Problem(f"{label}: sources", wanted, "cluster, ssh, any or a list of inventory names", host))
            continue
        if "clients" in service and allowed != ANY:
            allowed = allowed + sources.clients(service.get("clients_variable") or f"{label}: clients",
                                                service["clients"])
        rules.append(_rule(label, match, allowed))
    return rules, cluster_ports


def _extra_rules_of_ports(extra_ports, host, sources: _Sources, problems) -> tuple[list[dict], list[str]]:
    """firewall_extra_ports: {port, proto, sources, why}, each checked."""
    rules, cluster_ports = [], []
    if not isinstance(extra_ports, (list, tuple)):
        problems.append(Problem("firewall_extra_ports", extra_ports, "a list of {port, proto, sources, why}", host))
        return rules, cluster_ports
    allowed_keys = {"port", "proto", "sources", "why"}
    for entry in extra_ports:
        what = ("each entry a mapping {port, proto, sources, why}: port 1-65535 or a range first-last, proto tcp "
                "or udp, sources a list of addresses or networks or any, why a note of at most 100 characters "
                "without quotes")
        if not isinstance(entry, dict) or "port" not in entry or set(entry) - allowed_keys:
            problems.append(Problem("firewall_extra_ports", entry, what, host))
            continue
        span = _span("firewall_extra_ports", entry["port"], problems, host)
        proto = entry.get("proto", "tcp")
        why = entry.get("why", "firewall_extra_ports")
        if proto not in PROTOS:
            problems.append(Problem("firewall_extra_ports", entry, "proto tcp or udp", host))
            continue
        if not isinstance(why, str) or not _NOTE.match(why):
            problems.append(Problem("firewall_extra_ports", why, "why: a note of at most 100 characters, one line, "
                                    "without quotes or backslashes", host))
            continue
        wanted = entry.get("sources")
        if wanted == ANY:
            allowed = ANY
        elif wanted is None:
            allowed = list(sources.cluster)
        else:
            allowed = sources.checked("firewall_extra_ports", wanted, world=True)
        if span is None:
            continue
        if wanted is None:
            cluster_ports.append(f"{why} {validate.render_ports(span)}/{proto}")
        rules.append(_rule(why, f"{proto} dport {validate.render_ports(span)}", allowed))
    return rules, cluster_ports


def _raw_rules(extra_rules, host, problems) -> list[str]:
    """firewall_extra_rules: one line of text each (nft -c checks what they say)."""
    if not isinstance(extra_rules, (list, tuple)):
        problems.append(Problem("firewall_extra_rules", extra_rules, "a list of nftables rules, one line each", host))
        return []
    found = []
    for rule in extra_rules:
        if not isinstance(rule, str) or "\n" in rule or "\r" in rule or not rule.strip():
            problems.append(Problem("firewall_extra_rules", rule, "one nftables rule, one line of text", host))
            continue
        found.append(rule.strip())
    return found


def ruleset(services, host: str, addresses, cluster, allowed_sources=(), allow_world=False, ssh_sources=(),
            controller_sources=(), controller_port=22, extra_ports=(), extra_rules=()) -> dict:
    """This node's input chain: {controller, rules, extra_rules}, every value checked, or :class:`Refused`.

    ``controller`` is the rule for the controller's SSH (None without an
    address), ``rules`` the table's services this node runs followed by
    firewall_extra_ports, ``extra_rules`` the raw rules. Each rule is
    ``{why, match, any, v4, v6}``: ``match`` like ``tcp dport 6817``, the
    sources split by family, unique and sorted.
    """
    host = str(host)
    problems: list[Problem] = []
    sources = _Sources(host, addresses, cluster, allowed_sources, allow_world, problems)

    controller = None
    port = _span("firewall_ssh_port (or ansible_port)", controller_port, problems, host)
    controllers = sources.checked("firewall_controller_sources (empty: the address of SSH_CLIENT)",
                                  controller_sources, world=True)
    if port is not None and controllers:
        controller = _rule("SSH from the controller", f"tcp dport {validate.render_ports(port)}", controllers)

    rules, cluster_ports = _service_rules(services, host, sources, ssh_sources, problems)
    more, more_ports = _extra_rules_of_ports(extra_ports, host, sources, problems)
    raw = _raw_rules(extra_rules, host, problems)

    for value in sources.world_allowed:
        opened = ", ".join(cluster_ports + more_ports) or "no port here"
        problems.append(Problem(
            "firewall_allowed_sources", value,
            f"every address: on {host} it would open {opened} to the world; set firewall_allow_world: true to mean "
            "it, or name the networks that need them", host))
    if problems:
        raise Refused(host, problems)
    return {"controller": controller, "rules": rules + more, "extra_rules": raw}
