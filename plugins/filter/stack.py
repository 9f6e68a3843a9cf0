# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node stack filters: lockstep.gpu.components flattens gpu_facts into the
components verify.yml compares, fact_summary puts a node's stack on one line,
os_release names the node's platform as the roles need it. Each filter's
documentation is the YAML file of its name beside this one."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components, fact_summary
from ansible_collections.lockstep.gpu.plugins.plugin_utils.os_facts import os_release


class FilterModule:
    """What a node runs, as the roles and verify.yml compare it."""

    def filters(self):
        return {
            "components": components,
            "fact_summary": fact_summary,
            "os_release": os_release,
        }
