# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credential filters: lockstep.gpu.redact_urls (for messages) and
url_credentials (for a task's no_log). The logic is module_utils/redact.py,
which the modules use for their own messages; each filter's documentation is
the YAML file of its name beside this one."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.module_utils.redact import has_credentials, redact_urls


class FilterModule:
    """Credentials in URLs kept out of the output."""

    def filters(self):
        return {"redact_urls": redact_urls, "url_credentials": has_credentials}
