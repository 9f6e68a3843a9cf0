# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sizing filters: lockstep.gpu.gpu_memory_gb and lockstep.gpu.gpus_needed
(logic in plugin_utils/sizing.py; documentation in the YAML files of their
names beside this one)."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils.sizing import gpu_memory_gb, gpus_needed


class FilterModule:
    """GPU memory a model's weights need, and how many GPUs hold it."""

    def filters(self):
        return {"gpu_memory_gb": gpu_memory_gb, "gpus_needed": gpus_needed}
