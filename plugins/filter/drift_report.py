# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift filters: lockstep.gpu.drift compares the nodes; drift_line,
drift_table, drift_markdown and drift_html render its report; drift_changes
compares it with the previous run's; stack_lock makes a clean one the
cluster's stack lock, rollout_lock the lock of a rolling upgrade's batches; name_check prepares the name
resolution of every node for it, torch_check each node's torch against its
driver and system NCCL. The logic is in plugin_utils/ (drift.py,
history.py, names.py, torch_checks.py and report_*.py); each filter's documentation is the YAML file of
its name beside this one."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import drift, rollout_lock, stack_lock
from ansible_collections.lockstep.gpu.plugins.plugin_utils.history import drift_changes
from ansible_collections.lockstep.gpu.plugins.plugin_utils.names import name_check
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import drift_line
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_html import drift_html
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_markdown import drift_markdown
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_table import drift_table
from ansible_collections.lockstep.gpu.plugins.plugin_utils.torch_checks import torch_check


class FilterModule:
    """Cross-node drift analysis and its renderers."""

    def filters(self):
        return {
            "drift": drift,
            "drift_line": drift_line,
            "drift_table": drift_table,
            "drift_markdown": drift_markdown,
            "drift_html": drift_html,
            "drift_changes": drift_changes,
            "name_check": name_check,
            "torch_check": torch_check,
            "stack_lock": stack_lock,
            "rollout_lock": rollout_lock,
        }
