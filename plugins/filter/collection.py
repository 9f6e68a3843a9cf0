# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter lockstep.gpu.collection_file: where one of the collection's own
Python files is on the controller, found through Python's import system (the
collection as Ansible loaded it), not through a path relative to a role. The
documentation is collection_file.yml beside this file."""

from __future__ import annotations

import importlib.util
import re

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


class FilterModule:
    """The collection's own files."""

    def filters(self):
        return {"collection_file": collection_file}
