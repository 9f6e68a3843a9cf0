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

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight.render import node_values
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem, report

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
        host = task_vars["inventory_hostname"]
        groups = {name: list(members) for name, members in task_vars["groups"].items()}
        here = [r for r in roles if r not in engine.GPU_ROLES or host in groups.get(gpu_group, ())]
        values, raw, problems = node_values(self._templar, self._loader, task_vars, here)
        ported = [r for r in here if engine.rules(r)]
        ctx = Context(hosts=[host], groups=groups, values={host: values}, raw={host: raw},
                      facts={host: dict(task_vars.get("ansible_facts") or {})})
        request = engine.probe_request(ctx, host, ported, gpu_group)
        probe = self._execute_module("lockstep.gpu.preflight_probe", module_args=request, task_vars=task_vars)
        if probe.get("failed"):
            raise AnsibleActionFail(f"could not read {host} for the preflight: {probe.get('msg', probe)}")
        # Data for the cluster step, never shown (the values hold tokens and passwords): the registered
        # result keeps it, the output of -v does not.
        return {"changed": False, "values": values, "raw": raw, "problems": [asdict(p) for p in problems],
                "probe": {k: probe.get(k) for k in _PROBE_KEYS}, "_ansible_no_log": True}

    def _cluster(self, task_vars, roles, gpu_group, result):
        hostvars = task_vars["hostvars"]
        hosts = list(task_vars.get("ansible_play_hosts") or [])
        groups = {name: list(members) for name, members in task_vars["groups"].items()}
        nodes = {host: hostvars[host][result] for host in hosts}
        problems = [Problem(p["variable"], p["value"], p["allowed"], p["node"])
                    for node in nodes.values() for p in node.get("problems", [])]
        ctx = Context(hosts=hosts, groups=groups, values={h: dict(n["values"]) for h, n in nodes.items()},
                      raw={h: dict(n["raw"]) for h, n in nodes.items()},
                      facts={h: dict(hostvars[h].get("ansible_facts") or {}) for h in hosts},
                      probes={h: dict(n["probe"]) for h, n in nodes.items()}, roles=tuple(roles))
        problems += engine.check(ctx, [r for r in engine.ENGINE_ROLES if r in roles], gpu_group)
        problems = engine.redact(problems, engine.secrets(roles))
        if problems:
            return {"failed": True, "changed": False, "msg": report(problems)}
        return {"changed": False, "msg": f"{len(hosts)} nodes checked, no problem"}
