# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role monitoring (what roles/monitoring/tasks/preflight.yml checked in Jinja).

Nothing is checked on a node whose monitoring_enabled is false. The nodes
are the cluster contract's (roles/cluster/vars/main.yml): the servers are
the inventory's group monitoring_server_group, the DCGM nodes those of
monitoring_node_group also in monitoring_gpu_group while
monitoring_dcgm_exporter_enabled. Types (ports and minutes ints, durations
strings, the collectors a list of mappings) are the argument specs'. Not
here: the ports' range (1-65535), which the contract's rules check for
every service (cluster.py: _ports), and NVIDIA's CUDA repository and key on
the DCGM nodes (include_role nvidia_repo tasks_from: preflight), which
stays in Jinja.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible_collections.lockstep.gpu.plugins.filter.addresses import ALLOWED as LISTEN_ALLOWED
from ansible_collections.lockstep.gpu.plugins.filter.addresses import listen_address_problems
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import where_enabled
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# Everything is computed from the specs' values and the inventory's groups.
VARIABLES: tuple[str, ...] = ()

LISTEN = ("monitoring_node_exporter_listen_address", "monitoring_prometheus_listen_address",
          "monitoring_dcgm_exporter_listen_address")
DURATIONS = ("monitoring_scrape_interval", "monitoring_evaluation_interval", "monitoring_prometheus_retention",
             "monitoring_lockstep_drift_for")
PATHS = ("monitoring_textfile_dir", "monitoring_lockstep_lib")

# vars/main.yml's monitoring_duration_pattern (a unit test keeps them equal): 15s, 1h30m.
DURATION = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+")
# What the role writes into unit files and command lines unquoted.
_PATH = re.compile(r'/[^\s"]*')
# A Debian version with its revision (4.8.2-1, 1:4.8.2-1).
_VERSION = re.compile(r"([0-9]+:)?[0-9][0-9A-Za-z.+~]*-[0-9A-Za-z.+~]+")
_FIELD = re.compile(r"DCGM_FI_[A-Z0-9_]+")
# One CSV cell: the collectors file is field, type, help per line.
_HELP = re.compile(r"[^,\n]+")
TYPES = ("gauge", "counter", "label")

SERVER_GROUP = ("a group without a node in the inventory, and Prometheus runs on its nodes: "
                "name a group with at least one node (default head)")
DURATION_ALLOWED = ("it must be a Prometheus duration, a number and a unit (ms, s, m, h, d, w, y), "
                    "e.g. 15s, 1m, 15d or 1h30m")
INTERVAL = "it must be a whole number of minutes, 1 or more (how often a node's components are collected)"
STALE = ("it must be a whole number of minutes, more than monitoring_lockstep_interval_minutes ({interval}): "
         "a node is stale after it missed a collection")
PATH = "it must be an absolute path without spaces or quotes"
VERSION = ("it must be a Debian package version of datacenter-gpu-manager-exporter with its revision, "
           "e.g. 4.8.2-1")
COLLECTORS = ("it must be a non-empty list of {field, type, help}, field a DCGM field "
              "(e.g. DCGM_FI_DEV_GPU_UTIL)")
COLLECTOR = "not a mapping {field, type, help}"
FIELD = ("not a DCGM field: DCGM_FI_ and capitals, digits, underscores, e.g. DCGM_FI_DEV_GPU_UTIL "
         "(each collector needs one)")
TYPE = "not a collector type: the type is one of gauge, counter, label"
HELP = "not one line of text without commas (the help of a collector, a cell of its CSV file)"


def _whole(value) -> bool:
    """An int that is no boolean (the spec takes true for an int; Jinja's regex did not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _written(ctx, host, name):
    """The value as the inventory wrote it: the path type expands ~ and $VAR on the controller."""
    raw = ctx.raw.get(host, {}).get(name)
    return raw if isinstance(raw, str) else ctx.var(host, name)


def _in_group(ctx, host, variable) -> bool:
    """Is host in the inventory group that variable names?"""
    name = ctx.var(host, variable)
    return isinstance(name, str) and host in (ctx.groups.get(name) or ())


def is_dcgm_node(ctx, host) -> bool:
    """vars/main.yml's monitoring_is_dcgm_node: host in monitoring_dcgm_nodes (the contract's)."""
    return (ctx.var(host, "monitoring_dcgm_exporter_enabled") is True
            and _in_group(ctx, host, "monitoring_node_group") and _in_group(ctx, host, "monitoring_gpu_group"))


def _server_group(ctx, host):
    """'Refuse a monitoring server group without a node' (monitoring_servers empty)."""
    group = ctx.var(host, "monitoring_server_group")
    if ctx.has(host, "monitoring_server_group") and not (isinstance(group, str) and ctx.groups.get(group)):
        yield Problem("monitoring_server_group", group, SERVER_GROUP, host)


def _listen_addresses(ctx, host):
    """'Refuse a listen address that is not an address' (filter listen_address_problems)."""
    for name in LISTEN:
        if ctx.has(host, name) and listen_address_problems({name: ctx.var(host, name)}):
            yield Problem(name, ctx.var(host, name), f"it must be {LISTEN_ALLOWED}", host)


def _durations(ctx, host):
    """'Refuse an interval or a retention that is not a Prometheus duration'."""
    for name in DURATIONS:
        value = ctx.var(host, name)
        if ctx.has(host, name) and not (isinstance(value, str) and DURATION.fullmatch(value)):
            yield Problem(name, value, DURATION_ALLOWED, host)


def _minutes(ctx, host):
    """'Refuse an exporter interval or a staleness that is not whole minutes, or a staleness within one
    interval'."""
    interval = ctx.var(host, "monitoring_lockstep_interval_minutes")
    stale = ctx.var(host, "monitoring_lockstep_stale_minutes")
    valid = _whole(interval) and interval >= 1
    if ctx.has(host, "monitoring_lockstep_interval_minutes") and not valid:
        yield Problem("monitoring_lockstep_interval_minutes", interval, INTERVAL, host)
    if not ctx.has(host, "monitoring_lockstep_stale_minutes"):
        return
    # Without a valid interval the staleness must still be a positive whole number.
    if not _whole(stale) or stale <= (interval if valid else 0):
        shown = interval if ctx.has(host, "monitoring_lockstep_interval_minutes") else "unknown"
        yield Problem("monitoring_lockstep_stale_minutes", stale, STALE.format(interval=shown), host)


def _paths(ctx, host):
    """'Refuse a textfile directory or a code directory that is not an absolute path'."""
    for name in PATHS:
        value = _written(ctx, host, name)
        if ctx.has(host, name) and not (isinstance(value, str) and _PATH.fullmatch(value)):
            yield Problem(name, value, PATH, host)


def _dcgm_version(ctx, host):
    """'Refuse a DCGM exporter version that is not a package version' (DCGM nodes only)."""
    version = ctx.var(host, "monitoring_dcgm_exporter_version")
    if not is_dcgm_node(ctx, host) or not ctx.has(host, "monitoring_dcgm_exporter_version"):
        return
    if not (isinstance(version, str) and _VERSION.fullmatch(version)):
        yield Problem("monitoring_dcgm_exporter_version", version, VERSION, host)


def _collector(entry, where: str, host):
    """The problems of one collector {field, type, help}."""
    if not isinstance(entry, Mapping):
        yield Problem(where, entry, COLLECTOR, host)
        return
    # Jinja's map('string'): a number is its text, a missing type or help ''.
    field, kind, text = (str(entry[k]) if entry.get(k) is not None else "" for k in ("field", "type", "help"))
    if not _FIELD.fullmatch(field):
        yield Problem(f"{where}.field", entry.get("field", ""), FIELD, host)
    if kind not in TYPES:
        yield Problem(f"{where}.type", entry.get("type", ""), TYPE, host)
    if not _HELP.fullmatch(text):
        yield Problem(f"{where}.help", entry.get("help", ""), HELP, host)


def _dcgm_collectors(ctx, host):
    """'Refuse DCGM exporter collectors that are not DCGM fields with a type and a help' (DCGM nodes only)."""
    name = "monitoring_dcgm_exporter_collectors"
    collectors = ctx.var(host, name)
    if not is_dcgm_node(ctx, host) or not ctx.has(host, name):
        return
    if not isinstance(collectors, list) or not collectors:
        yield Problem(name, collectors, COLLECTORS, host)
        return
    for index, entry in enumerate(collectors):
        yield from _collector(entry, f"{name}[{index}]", host)


RULES = where_enabled("monitoring_enabled", (
    _server_group, _listen_addresses, _durations, _minutes, _paths, _dcgm_version, _dcgm_collectors))
