# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action lockstep.gpu.preflight: the whole inventory checked in Python, every problem in one failure.

Two steps of role preflight (roles/preflight/tasks/main.yml):

- ``phase: node`` (every node, in parallel): the checked roles' values for
  this node, rendered as the roles would see them (render.py), validated
  against their argument specs and the list/mapping shapes they take; then
  ONE run of lockstep.gpu.preflight_probe with what every role's rules need
  read on the node. Never fails on a bad value: it returns the values, the
  problems found so far and the probe's answer.
- ``phase: cluster`` (run_once): reads every node's result from
  ``hostvars[node][result]``, runs every role's rules over the whole play
  (plugin_utils/preflight/engine.py) and fails once, naming every problem
  of every node. It changes nothing anywhere.
"""

from __future__ import annotations

from dataclasses import asdict

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight.render import node_step
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import report

_PROBE_KEYS = ("interfaces", "hcas", "listening", "memory_mb", "virtualization", "markers",
               "hcas_at", "paths", "read", "resolved", "packages", "users", "connect")


class ActionModule(ActionBase):
    """See the module docstring."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("phase", "roles", "gpu_group", "result"))

    def run(self, tmp=None, task_vars=None):
        super().run(tmp, task_vars)
        args = self._task.args
        phase = args.get("phase", "node")
        roles = list(args.get("roles") or [])
        gpu_group = args.get("gpu_group", "gpu")
        if phase == "node":
            return self._node(task_vars, roles, gpu_group)
        if phase == "cluster":
            return self._cluster(task_vars, roles, gpu_group, args.get("result", "preflight_node"))
        raise AnsibleActionFail(f"phase must be node or cluster, not {phase!r}")

    def _node(self, task_vars, roles, gpu_group):
        values, raw, problems, request = node_step(self._templar, self._loader, task_vars, roles, gpu_group)
        probe = self._execute_module("lockstep.gpu.preflight_probe", module_args=request, task_vars=task_vars)
        if probe.get("failed"):
            host = task_vars["inventory_hostname"]
            raise AnsibleActionFail(f"could not read {host} for the preflight: {probe.get('msg', probe)}")
        # Data for the cluster step, never shown (the values hold tokens and passwords): the registered
        # result keeps it, the output of -v does not.
        return {"changed": False, "values": values, "raw": raw, "problems": [asdict(p) for p in problems],
                "probe": {k: probe.get(k) for k in _PROBE_KEYS}, "_ansible_no_log": True}

    def _cluster(self, task_vars, roles, gpu_group, result):
        hostvars = task_vars["hostvars"]
        hosts = list(task_vars.get("ansible_play_hosts") or [])
        groups = {name: list(members) for name, members in task_vars["groups"].items()}
        problems = engine.check_play(hosts, groups, {host: hostvars[host][result] for host in hosts},
                                     {h: dict(hostvars[h].get("ansible_facts") or {}) for h in hosts},
                                     roles, gpu_group)
        if problems:
            return {"failed": True, "changed": False, "msg": report(problems)}
        return {"changed": False, "msg": f"{len(hosts)} nodes checked, no problem"}
