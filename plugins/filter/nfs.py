# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters lockstep.gpu.nfs_export_clients and lockstep.gpu.nfs_client_problems:
the clients of the shared store's NFS export, each checked before it is
written into /etc/exports or ganesha.conf (issue 29, finding 2). The checks
are plugin_utils/validate.py's; the documentation is the .yml files beside
this one."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate

VARIABLE = "shared_storage_export_clients"


def nfs_client_problems(clients, world=False, variable=VARIABLE):
    """One line per client that may not be written into the export: 'variable is 'value': allowed'."""
    if isinstance(clients, (str, bytes)) or not isinstance(clients, (list, tuple)):
        return [f"{variable} is '{validate.short(clients)}': a list of addresses, networks or host names"]
    problems = []
    for client in clients:
        try:
            validate.nfs_client(client, world=bool(world))
        except validate.Invalid as error:
            problems.append(f"{variable} is '{validate.short(client)}': {error}")
    return problems


def nfs_export_clients(clients, world=False, variable=VARIABLE):
    """The clients as the export writes them, or an error naming every bad one (nothing is written then)."""
    problems = nfs_client_problems(clients, world, variable)
    if problems:
        raise AnsibleFilterError("The NFS export is not written: " + "; ".join(problems))
    # As written: an address stays an address (10.0.0.5, not 10.0.0.5/32).
    return list(clients)


class FilterModule:
    """The NFS export's clients."""

    def filters(self):
        return {"nfs_export_clients": nfs_export_clients, "nfs_client_problems": nfs_client_problems}
