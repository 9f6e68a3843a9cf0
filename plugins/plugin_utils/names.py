# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Name resolution across nodes: does every node reach every other node's
name at the address that node has now?

The filter lockstep.gpu.name_check calls :func:`name_check` on the
components of every host (``{host: {component: value}}``, see
components.py) before lockstep.gpu.drift compares them. A node that
gpu_facts asked to resolve names (option ``resolve``) carries
``names.address`` (its own address, read in this run) and
``names.resolve.<name>`` (what its resolver gives for each name). Those are
replaced by one component per node::

    net.names = "every node at its own address"
              | "dr3 -> 10.231.4.99 (dr3 has 10.231.4.13); ..."

and, when every readable host was asked, ``{"net.names": OK}`` is returned
as a declared expectation, so that a cluster where every node still holds a
moved node's old address drifts on every node (a majority would call the
stale address right). A node's own name is not checked: Debian maps it to
127.0.1.1 by design.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import is_error

OK = "every node at its own address"
ADDRESS = "names.address"
RESOLVE = "names.resolve."


def _readable(components) -> bool:
    return any(not is_error(v) for v in components.values())


def _wrong_names(host, components, own):
    wrong = []
    for key in sorted(k for k in components if k.startswith(RESOLVE)):
        peer, got = key[len(RESOLVE):], components[key]
        if peer == host:
            continue
        if is_error(got):
            wrong.append(f"{peer} unresolved ({got['error']})")
            continue
        truth = own.get(peer)
        if isinstance(truth, str) and got != truth:
            wrong.append(f"{peer} -> {got} ({peer} has {truth})")
    return wrong


def name_check(facts):
    """``{"components": facts with net.names, "expected": {...}}``; see the module docstring."""
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(f"name_check: expected {{host: {{component: value}}}}, got {type(facts).__name__}")
    own = {}
    for host, components in facts.items():
        if isinstance(components, Mapping):
            own[host] = components.get(ADDRESS)
    checked, asked, everyone = {}, False, True
    for host, components in facts.items():
        if not isinstance(components, Mapping):
            raise AnsibleFilterError(f"name_check: the components of {host!r} are not a mapping")
        rest = {k: v for k, v in components.items() if k != ADDRESS and not k.startswith(RESOLVE)}
        if ADDRESS not in components:
            everyone = everyone and not _readable(components)
            checked[host] = rest
            continue
        asked = True
        if is_error(own[host]):
            rest["net.names"] = {"error": f"this node's address: {own[host]['error']}"}
        else:
            rest["net.names"] = "; ".join(_wrong_names(host, components, own)) or OK
        checked[host] = rest
    return {"components": checked, "expected": {"net.names": OK} if asked and everyone else {}}
