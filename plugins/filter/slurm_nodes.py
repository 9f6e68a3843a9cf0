# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter lockstep.gpu.slurm_node_plan: what role slurm's wait does with each
compute node after a converge (issue 27). A node Slurm itself took out of
service for a cause the converge fixes (slurmd not responding, a
configuration its registration did not match) is resumed; a node whose
drain or down reason someone else set (an admin's ``scontrol update
state=drain reason=...``) is left as it is and named. The documentation is
the .yml files beside this one."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# States in which a node runs or takes jobs.
READY = ("idle", "allocated", "mixed")
# States that take a node out of service, with a reason and who set it.
OUT = ("drained", "draining", "drain", "down", "fail", "failing", "inval")


def parse_sinfo_nodes(text):
    """{node: {state, flags, user, since, reason}} from `sinfo --noheader --Node --format '%N|%T|%u|%H|%E'`
    (role slurm's slurm_sinfo_format, the one owner of that format: the reason last, since it is free text);
    a node listed once per partition is read once. state: the base state in lower case ('idle', 'drained');
    flags: what follows it after '+' ('drain', 'not_responding', ...) and the suffixes of %T ('*')."""
    nodes = {}
    for line in (text or "").splitlines():
        fields = line.split("|", 4)
        if len(fields) != 5 or not fields[0].strip():
            continue
        name, state, user, since, reason = (field.strip() for field in fields)
        parts = state.lower().split("+")
        base = parts[0].rstrip("*~#!%$@^-")
        flags = [flag for flag in parts[1:] if flag] + (["not_responding"] if parts[0].endswith("*") else [])
        nodes.setdefault(name, {"state": base, "flags": flags, "user": user, "since": since,
                                "reason": "" if reason.lower() in ("none", "(null)") else reason})
    return nodes


def _automatic(info, patterns):
    """Whether the node's reason is one Slurm sets itself for a cause a converge fixes (a pattern matches it
    from its start). The reason's text decides, not its user: slurmctld sets its own reasons as SlurmUser,
    but Slurm 22.05 gives them as set by root after a `scontrol reconfigure`, which a converge runs
    (tests/fixtures/slurm/sinfo_after_reconfigure.txt)."""
    return bool(info["reason"]) and any(pattern.match(info["reason"]) for pattern in patterns)


def slurm_reason_problems(patterns):
    """One message per entry of slurm_resume_reasons that is not a Python regular expression; [] when all are."""
    problems = []
    for pattern in patterns or []:
        try:
            re.compile(str(pattern))
        except re.error as exc:
            problems.append(f"slurm_resume_reasons has '{pattern}', not a Python regular expression ({exc}):"
                            " write each reason's start, with characters such as * ( [ escaped by a backslash")
    return problems


def _compile(patterns):
    problems = slurm_reason_problems(patterns)
    if problems:
        raise AnsibleFilterError("; ".join(problems))
    return [re.compile(str(pattern)) for pattern in patterns or []]


def _detail(name, info):
    """'sl3 drained: RMA: GPU 3 Xid 79 (set by root at 2026-12-05T11:02:33)', 'sl2 completing', 'sl4 not in sinfo'."""
    if info is None:
        return f"{name} not in sinfo"
    state = "+".join([info["state"]] + info["flags"])
    if not info["reason"]:
        return f"{name} {state}"
    return f"{name} {state}: {info['reason']} (set by {info['user'] or 'unknown'} at {info['since'] or 'unknown'})"


def slurm_node_plan(sinfo_output, nodes, resume_reasons):
    """{ready, resume, waiting, held, not_ready, details} for the compute nodes `nodes`:
    ready: idle, allocated or mixed, not drained, responding; resume: out of service for a reason that matches
    resume_reasons (Python regular expressions, from the reason's start); held: out of service for any other reason, each as its detail; waiting: the rest (not
    registered yet, completing, down without a reason, not in sinfo); not_ready: resume + waiting, what the
    role waits for; details: {node: 'node state: reason (set by user at time)'} for every node."""
    patterns = _compile(resume_reasons)
    found = parse_sinfo_nodes(sinfo_output)
    plan = {"ready": [], "resume": [], "waiting": [], "held": [], "details": {}}
    for name in nodes or []:
        info = found.get(name)
        plan["details"][name] = _detail(name, info)
        out = info is not None and (info["state"] in OUT or "drain" in info["flags"])
        if info is not None and info["state"] in READY and not out and "not_responding" not in info["flags"]:
            plan["ready"].append(name)
        elif out and info["reason"] and _automatic(info, patterns):
            plan["resume"].append(name)
        elif out and info["reason"]:
            plan["held"].append(plan["details"][name])
        else:
            plan["waiting"].append(name)
    plan["not_ready"] = plan["resume"] + plan["waiting"]
    return plan


def slurm_drain_plan(sinfo_output, nodes, reason, resume_reasons):
    """{drain, ours, held, absent, details} for the nodes of a rolling upgrade's batch (role slurm's drain.yml).
    `reason` must be one that none of `resume_reasons` matches, else a converge would resume the nodes:
    drain: in service, or out of it without a reason: drained now with `reason`; ours: out of service with
    exactly `reason` (drained by this upgrade, or by a run of it that stopped): resumed once the batch verified;
    held: out of service for any other reason (an admin's drain above all), each as its detail: upgraded like the
    others, never resumed; absent: not in sinfo (no slurmd): upgraded without Slurm."""
    if not str(reason or "").strip() or any(p.match(str(reason)) for p in _compile(resume_reasons)):
        raise AnsibleFilterError(f"slurm_drain_reason '{reason}' is empty or matches slurm_resume_reasons: role slurm"
                                 " would resume the nodes a rolling upgrade drains; give the upgrade a reason of its own")
    found = parse_sinfo_nodes(sinfo_output)
    plan = {"drain": [], "ours": [], "held": [], "absent": [], "details": {}}
    for name in nodes or []:
        info = found.get(name)
        plan["details"][name] = _detail(name, info)
        if info is None:
            plan["absent"].append(name)
            continue
        out = info["state"] in OUT or "drain" in info["flags"]
        if out and info["reason"] == reason:
            plan["ours"].append(name)
        elif out and info["reason"]:
            plan["held"].append(plan["details"][name])
        else:
            plan["drain"].append(name)
    return plan


class FilterModule:
    """What role slurm does with each compute node after a converge, and with a rolling upgrade's batch."""

    def filters(self):
        return {"slurm_node_plan": slurm_node_plan, "slurm_reason_problems": slurm_reason_problems,
                "slurm_drain_plan": slurm_drain_plan}
