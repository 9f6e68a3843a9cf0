# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lookup lockstep.gpu.bundle_components: many saved support bundles read on the controller in one pass."""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bundle_components
author:
  - Lockstep contributors (@lockstep)
version_added: "0.1.0"
short_description: The components of many saved support bundles, read on the controller in one pass
description:
  - Reads each support bundle directory (see M(lockstep.gpu.gpu_facts), option O(lockstep.gpu.gpu_facts#module:from_dir))
    on the controller, analyses it as gpu_facts does and reduces it to the components that
    P(lockstep.gpu.drift#filter) compares, for every host at once.
  - The verify role uses it for the hosts that set C(gpu_facts_from_dir), so that a cluster of thousands of
    bundles costs one analysis per bundle in one process instead of one module run per host.
  - A bundle directory that cannot be read yields the component C(collect) with an C({error}) value, so the
    drift report names the host as unreadable; the lookup itself never fails for one bad bundle.
options:
  _terms:
    description: One dictionary, host name -> bundle directory on the controller.
    required: true
    type: dict
  packages:
    description: Package names (fnmatch patterns allowed) reported as C(pkg.<name>) components, as the verify role's C(verify_packages).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Components of every bundled host
  ansible.builtin.set_fact:
    bundle_components: >-
      {{ lookup('lockstep.gpu.bundle_components', {'gpu01': 'bundles/gpu01', 'gpu02': 'bundles/gpu02'}) }}
"""

RETURN = r"""
_raw:
  description: One dictionary, host name -> {component -> value}.
  type: list
  elements: dict
"""

from collections.abc import Mapping  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import collect_from_dir  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components  # noqa: E402


def bundle_components(bundles, packages=()):
    """{host: bundle dir} -> {host: components}; an unreadable bundle gives a ``collect`` error."""
    result = {}
    for host, path in bundles.items():
        try:
            facts = analyse(collect_from_dir(str(path)), packages=list(packages))
        except OSError as exc:
            result[str(host)] = {"collect": {"error": f"cannot read the bundle {path}: {exc.strerror or exc}"}}
            continue
        result[str(host)] = components(facts)
    return result


class LookupModule(LookupBase):
    """Analyse many bundles in one pass."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1 or not isinstance(terms[0], Mapping):
            raise AnsibleLookupError("bundle_components takes one dictionary, host name -> bundle directory")
        return [bundle_components(dict(terms[0]), self.get_option("packages"))]
