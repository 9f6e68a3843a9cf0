# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter lockstep.gpu.port_conflicts: two services of one node on the same
port, from the cluster contract's service table as the inventory sets it
(issue 29, finding 6: slurm_srun_port_range 6000-7000 over slurmd's 6818,
train_check_port 9090 over Prometheus'). The documentation is
port_conflicts.yml beside this file."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate


def _spans(services, host):
    """(variable, proto, (first, last)) of every enabled service of this node; bad values are the firewall's to name."""
    for service in services or []:
        if not service.get("enabled") or service.get("ephemeral") or host not in (service.get("nodes") or []):
            continue
        try:
            yield service["variable"], service.get("proto", "tcp"), validate.port_range(service["port"])
        except (validate.Invalid, KeyError, TypeError):
            continue


def port_overlaps(services, host):
    """(variable, span, other, other span, proto) of each pair of this node's services whose ports overlap."""
    spans = sorted(set(_spans(services, host)))
    for index, (variable, proto, span) in enumerate(spans):
        for other, other_proto, other_span in spans[index + 1:]:
            if variable != other and proto == other_proto and validate.ports_overlap(span, other_span):
                yield variable, span, other, other_span, proto


def port_conflicts(services, host):
    """One line per pair of this node's services whose ports overlap: 'a is 'x' and b is 'y': ... on host'."""
    return [f"{variable} is '{validate.render_ports(span)}' and {other} is '{validate.render_ports(other_span)}': "
            f"both {proto} on {host}; each service of a node needs ports of its own"
            for variable, span, other, other_span, proto in port_overlaps(services, host)]


class FilterModule:
    """Ports of the cluster's services."""

    def filters(self):
        return {"port_conflicts": port_conflicts}
