# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter lockstep.gpu.firewall_rules: one node's nftables rules from the
cluster contract's service table, every port and source checked. The logic
is plugin_utils/firewall.py; the documentation is firewall_rules.yml beside
this file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.plugin_utils import firewall


def firewall_rules(services, host, addresses, cluster, allowed_sources=None, allow_world=False, ssh_sources=None,
                   controller_sources=None, controller_port=22, extra_ports=None, extra_rules=None):
    """cluster_services -> {controller, rules, extra_rules} for this host, or an error naming every bad value."""
    try:
        return firewall.ruleset(services, host, addresses, cluster,
                                allowed_sources=[] if allowed_sources is None else allowed_sources,
                                allow_world=allow_world,
                                ssh_sources=[] if ssh_sources is None else ssh_sources,
                                controller_sources=[] if controller_sources is None else controller_sources,
                                controller_port=controller_port,
                                extra_ports=[] if extra_ports is None else extra_ports,
                                extra_rules=[] if extra_rules is None else extra_rules)
    except firewall.Refused as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    """The firewall's rules."""

    def filters(self):
        return {"firewall_rules": firewall_rules}
