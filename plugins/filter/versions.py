# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version filters: lockstep.gpu.version_compare, pkg_upstream, cuda_min_driver,
cuda_driver_check. The logic is in plugin_utils/versions.py and cuda.py; each filter's
documentation is the YAML file of its name beside this one."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils import cuda, versions


class FilterModule:
    """Version ordering and the CUDA/driver contract."""

    def filters(self):
        return {
            "version_compare": versions.version_compare,
            "pkg_upstream": versions.pkg_upstream,
            "cuda_min_driver": cuda.cuda_min_driver,
            "cuda_driver_check": cuda.cuda_driver_check,
        }
