# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter lockstep.gpu.listen_address_problems: what is wrong with the
addresses a service is told to listen on, before they are written next to
its port (issue 29, finding 4: ``0.0.0.0:9090`` became
``--web.listen-address=0.0.0.0:9090:9090``). The documentation is
listen_address_problems.yml beside this file."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate

ALLOWED = ("an IPv4 address (0.0.0.0 for every one), an IPv6 address in brackets ([::] for every one), "
           "or '' for every address; no port (the port is its own variable)")


def _problem(value) -> bool:
    if value == "":
        return False
    if not isinstance(value, str):
        return True
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else None
    try:
        found = validate.address(value if inner is None else inner)
    except validate.Invalid:
        return True
    return (found.version == 6) != (inner is not None)


def listen_address_problems(addresses):
    """{variable: value} -> one line per value that is not a listen address: "variable is 'value': allowed"."""
    return [f"{variable} is '{validate.short(value)}': it must be {ALLOWED}"
            for variable, value in sorted((addresses or {}).items()) if _problem(value)]


class FilterModule:
    """Listen addresses."""

    def filters(self):
        return {"listen_address_problems": listen_address_problems}
