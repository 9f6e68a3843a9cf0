# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters lockstep.gpu.node_units and lockstep.gpu.service_problems: the
systemd units a node must run, read from the cluster contract's service
table (its ``unit`` fields: the one placement of every service), and what
``systemctl show`` says is wrong with them (issue 29, finding 7: verify.yml
passed while slurmctld, GPUStack or nfs-ganesha was stopped). The
documentation is the .yml files beside this one."""

from __future__ import annotations

# A unit that is not started at boot will not survive the node's next one.
NOT_AT_BOOT = ("disabled", "masked", "masked-runtime")


def entry_units(service):
    """An entry's unit field as a list: a unit spec, or a list of them (slurmctld and munge), [] when none."""
    units = service.get("unit") or []
    return [str(units)] if isinstance(units, str) else [str(unit) for unit in units if unit]


def node_units(services, host):
    """The unit specs (alternatives split by '|') of the enabled services that run on host, sorted, once each."""
    found = set()
    for service in services or []:
        if service.get("enabled") and host in (service.get("nodes") or []):
            found.update(entry_units(service))
    return sorted(found)


def unit_names(units):
    """['a|b', 'c'] -> ['a', 'b', 'c']: the arguments of one `systemctl show`, in order."""
    return [name for spec in units or [] for name in spec.split("|")]


def _blocks(text):
    """systemctl show's output: one {property: value} per unit, in the order of its arguments."""
    blocks, current = [], {}
    for line in (text or "").splitlines() + [""]:
        if not line.strip():
            if current:
                blocks.append(current)
            current = {}
            continue
        key, _sep, value = line.partition("=")
        current[key.strip()] = value.strip()
    return blocks


def _problem(name, props, enabled=None):
    """What is wrong with an installed unit; None when it runs, or when it is not installed here (the roles'
    packages are components of their own: a node whose role never ran is not a node with a stopped service).
    enabled: what `systemctl is-enabled` said of it, which wins over show's UnitFileState."""
    if props.get("LoadState") != "loaded":
        return None
    if props.get("ActiveState") != "active":
        return f"{name} ({props.get('ActiveState') or 'unknown'})"
    state = enabled or props.get("UnitFileState")
    if state in NOT_AT_BOOT:
        return f"{name} (active, {state})"
    return None


def units_to_recheck(show_output, units):
    """The loaded units whose UnitFileState `systemctl show` gives as not started at boot: asked again with
    `systemctl is-enabled`, which reads the unit files now. The manager caches UnitFileState, and a unit
    enabled since its last computation (seen on Debian 12: slurmd enabled by its package, the manager not
    reloaded after) still shows "disabled" there until the next daemon-reload."""
    names = unit_names(units)
    blocks = _blocks(show_output)
    if len(blocks) != len(names):
        return []
    return [name for name, props in zip(names, blocks)
            if props.get("LoadState") == "loaded" and props.get("UnitFileState") in NOT_AT_BOOT]


def service_problems(show_output, units, error="", is_enabled=""):
    """'none', or '<unit> (<state>)' for each installed required unit that is not active and enabled, by '; '.
    error: systemctl's stderr, named when the output is short (e.g. a node whose PID 1 is not systemd).
    is_enabled: the output of `systemctl is-enabled -- <units_to_recheck(show_output, units)>`, a line each."""
    names = unit_names(units)
    blocks = _blocks(show_output)
    if len(blocks) != len(names):
        why = (error or "").strip().splitlines()
        return f"unreadable: systemctl show answered for {len(blocks)} of {len(names)} units" + (
            f": {why[0].strip()}" if why else "")
    state = dict(zip(names, blocks))
    enabled = dict(zip(units_to_recheck(show_output, units), (is_enabled or "").split()))
    problems = []
    for spec in units or []:
        loaded = [name for name in spec.split("|") if state[name].get("LoadState") == "loaded"]
        found = [_problem(name, state[name], enabled.get(name)) for name in loaded]
        if found and all(found):
            problems.append(found[0])
    return "; ".join(problems) if problems else "none"


class FilterModule:
    """The services a node must run."""

    def filters(self):
        return {"node_units": node_units, "service_problems": service_problems, "units_to_recheck": units_to_recheck}
