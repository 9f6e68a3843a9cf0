# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter lockstep.gpu.pip_lock: a pip lock's pins and how it fails to lock
what a role declares. The logic is in plugin_utils/pip_lock.py; the
documentation is pip_lock.yml beside this file."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils.pip_lock import pip_lock


class FilterModule:
    """A pip lock read on the controller."""

    def filters(self):
        return {"pip_lock": pip_lock}
