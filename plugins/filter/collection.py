# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters on the collection's own Python files. collection_file: where one
is on the controller, found through Python's import system (the collection
as Ansible loaded it), not through a path relative to a role.
collection_stale: which of them a node's copy lacks or holds otherwise,
from one ansible.builtin.find of the node (role monitoring copies only
those). The documentation is collection_file.yml and collection_stale.yml
beside this file."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

PACKAGE = "ansible_collections.lockstep.gpu.plugins"
# module_utils/<name>.py or plugin_utils/<name>.py: the code that also runs
# on a node without Ansible (role monitoring's exporter).
_FILE = re.compile(r"^(module_utils|plugin_utils)/([a-z_][a-z0-9_]*)\.py$")


def collection_file(path):
    """'module_utils/collect.py' -> the absolute path of that file of lockstep.gpu on the controller."""
    found = _FILE.match(str(path))
    if not found:
        raise AnsibleFilterError(f"collection_file takes module_utils/<name>.py or plugin_utils/<name>.py, "
                                 f"not {path!r}")
    name = f"{PACKAGE}.{found.group(1)}.{found.group(2)}"
    try:
        spec = importlib.util.find_spec(name)
    except ImportError as error:
        raise AnsibleFilterError(f"{path}: the collection lockstep.gpu has no {name} ({error})") from None
    if spec is None or not spec.origin or not spec.has_location:
        raise AnsibleFilterError(f"{path}: the collection lockstep.gpu has no {name}")
    return spec.origin


def collection_stale(names, found, root, mode="0644", owner="root", group="root"):
    """The names (module_utils/<name>.py...) whose copy under root on the node, as ansible.builtin.find with
    get_checksum reported it (its files), is missing or differs from the controller's file in content (SHA-1,
    find's checksum), mode, owner or group; in the order of names."""
    if not isinstance(found, (list, tuple)) or not all(isinstance(f, Mapping) for f in found):
        raise AnsibleFilterError(f"collection_stale: found must be the files of ansible.builtin.find, got {found!r}")
    on_node = {str(f.get("path")): f for f in found}
    stale = []
    for name in names:
        with open(collection_file(name), "rb") as handle:
            checksum = hashlib.sha1(handle.read()).hexdigest()  # noqa: S324 - find's checksum, not security
        there = on_node.get(f"{str(root).rstrip('/')}/{name}") or {}
        if (there.get("checksum"), there.get("mode"), there.get("pw_name"), there.get("gr_name")) != (
                checksum, mode, owner, group):
            stale.append(name)
    return stale


class FilterModule:
    """The collection's own files."""

    def filters(self):
        return {"collection_file": collection_file, "collection_stale": collection_stale}
