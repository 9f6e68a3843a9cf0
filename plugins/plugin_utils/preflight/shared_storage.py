# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role shared_storage (what roles/shared_storage/tasks/preflight.yml checked in Jinja).

Nothing is checked on a node whose shared_storage_enabled is false (the
playbook skips it). Nothing is read on the nodes: the checks are of the
inventory. The server node is the contract's (the first node of
shared_storage_server_group when shared_storage_server names no NAS), each
client's address the contract's ``cluster_node_addresses``; the export's
clients are checked by plugin_utils/validate.py's ``nfs_client``, as the
filter lockstep.gpu.nfs_export_clients checks them when it writes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import where_enabled
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# The contract's address of every node (roles/cluster/vars/main.yml), rendered as the role renders it.
VARIABLES: tuple[str, ...] = ("cluster_node_addresses",)

PATHS = {"shared_storage_path": "/shared", "shared_storage_export_dir": "/srv/shared"}
# tasks/preflight.yml's patterns, matched whole (Jinja's '$' let a trailing newline through).
_PATH = re.compile(r"/\S*")
_MOUNT_OPTIONS = re.compile(r"[^\s,]+(,[^\s,]+)*")
_NAS = re.compile(r"[A-Za-z0-9.\[\]:_-]*[A-Za-z0-9\]]:/\S*")

PATH = "it must be an absolute path without spaces, not / itself (e.g. {example})"
MOUNT_OPTIONS = ("it must be mount options separated by commas, each one word without spaces "
                 "(e.g. nfsvers=4.2,hard)")
NAS = ("it must name a NAS as host:/export (e.g. nas1:/volume1/gpu), or be empty to export the store from "
       "shared_storage_server_group")
SERVER_GROUP = ("a group with no node in the inventory, and shared_storage_server names no NAS: its first node "
                "exports the store; put a node in that group, or set shared_storage_server to host:/export")
UNKNOWN_ADDRESSES = ("empty, and {nodes} of shared_storage_client_group '{group}' have neither base_node_address "
                     "nor a default route address in this run's facts: the export lists each node's address; set "
                     "shared_storage_export_clients (e.g. the cluster's network, 10.0.0.0/24) or gather every "
                     "node's facts")


def _written(ctx, host, name: str):
    """The value as the inventory wrote it (the spec turned [/shared] into "['/shared']")."""
    return ctx.raw.get(host, {}).get(name, ctx.var(host, name))


def _exports(ctx, host) -> bool:
    """Does a node of the inventory export the store (shared_storage_server names no NAS)?"""
    return ctx.has(host, "shared_storage_server") and ctx.var(host, "shared_storage_server") == ""


def _paths(ctx, host):
    """'Refuse a mount point or an exported directory that is not an absolute path'."""
    for name, example in PATHS.items():
        value = ctx.var(host, name)
        if not ctx.has(host, name):
            continue
        if not isinstance(value, str) or not _PATH.fullmatch(value) or not value.rstrip("/"):
            yield Problem(name, _written(ctx, host, name), PATH.format(example=example), host)


def _mount_options(ctx, host):
    """'Refuse mount options that are not single words'."""
    value = ctx.var(host, "shared_storage_mount_options")
    if ctx.has(host, "shared_storage_mount_options") and not (
            isinstance(value, str) and _MOUNT_OPTIONS.fullmatch(value)):
        yield Problem("shared_storage_mount_options", _written(ctx, host, "shared_storage_mount_options"),
                      MOUNT_OPTIONS, host)


def _nas(ctx, host):
    """'Refuse a NAS that is not host:/path' (when one is named)."""
    value = ctx.var(host, "shared_storage_server")
    if isinstance(value, str) and value and not _NAS.fullmatch(value):
        yield Problem("shared_storage_server", value, NAS, host)


def _server_group(ctx, host):
    """'Refuse a server group without a node when no NAS is named' (the inventory's group, not the play's)."""
    group = ctx.var(host, "shared_storage_server_group")
    if _exports(ctx, host) and isinstance(group, str) and not ctx.groups.get(group):
        yield Problem("shared_storage_server_group", group, SERVER_GROUP, host)


def _export_clients(ctx, host):
    """'Refuse export clients that are not addresses, networks or host names' ('*' and /0 need the switch)."""
    clients = ctx.var(host, "shared_storage_export_clients")
    if not _exports(ctx, host) or not isinstance(clients, list):
        return
    world = ctx.var(host, "shared_storage_export_world") is True
    for client in clients:
        try:
            validate.nfs_client(client, world=world)
        except validate.Invalid as error:
            yield Problem("shared_storage_export_clients", client, str(error), host)


def _client_addresses(ctx, host):
    """'Refuse a server that must export to nodes of unknown address' (on the server node only)."""
    group = ctx.var(host, "shared_storage_client_group")
    server_group = ctx.var(host, "shared_storage_server_group")
    addresses = ctx.var(host, "cluster_node_addresses")
    if (not _exports(ctx, host) or ctx.var(host, "shared_storage_export_clients") != []
            or not isinstance(server_group, str) or host != ctx.first(server_group)
            or not isinstance(group, str) or not isinstance(addresses, Mapping)):
        return
    missing = [name for name in ctx.groups.get(group, ()) if not addresses.get(name)]
    if missing:
        yield Problem("shared_storage_export_clients", [],
                      UNKNOWN_ADDRESSES.format(nodes=", ".join(missing), group=group), host)


RULES = where_enabled("shared_storage_enabled", (
    _paths, _mount_options, _nas, _server_group, _export_clients, _client_addresses))
