# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of the cluster contract (role cluster), checked with every role's.

What no single role owns: every service's port, and two services of one
node on one port. The table is the contract's ``cluster_services``
(roles/cluster/vars/main.yml) as the inventory sets it, the one every role
and the firewall read; a role's rules check only what is particular to its
ports (Slurm's srun range starts at 1024).
"""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.filter.ports import port_overlaps
from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# The service table, templated for each node (its nodes, switches and ports).
VARIABLES: tuple[str, ...] = ("cluster_services",)


def _ports(ctx):
    """Refuse a service port that is not a port (1-65535) or a range first-last, on or off: the value is
    wrong either way, and a switch turned on later would meet it."""
    for host in ctx.hosts:
        services = ctx.var(host, "cluster_services")
        for service in services if isinstance(services, list) else ():
            if not isinstance(service, dict) or not service.get("variable") or "port" not in service:
                continue
            port = service["port"]
            try:
                # A single port's own message when the value is a number; ranges are strings.
                validate.port(port) if isinstance(port, int) else validate.port_range(port)
            except validate.Invalid as error:
                yield Problem(service["variable"], port,
                              f"not a port of {service.get('name', 'its service')}: {error}", host)


def _port_overlaps(ctx):
    """Refuse two enabled services of one node on overlapping ports: the second would fail to start
    (or, for a range, the first job that picks the taken port would)."""
    for host in ctx.hosts:
        services = ctx.var(host, "cluster_services")
        if not isinstance(services, list):
            continue
        for variable, span, other, other_span, proto in port_overlaps(services, host):
            yield Problem(other, validate.render_ports(other_span),
                          f"overlaps {variable} '{validate.render_ports(span)}' ({proto}) on the node; "
                          "each service of a node needs ports of its own", host)


RULES = (_ports, _port_overlaps)
