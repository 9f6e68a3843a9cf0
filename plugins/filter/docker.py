# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of the docker role's preflight: lockstep.gpu.docker_daemon_problems
checks the daemon.json settings the role would write, before Docker is even
installed (the same rules the docker_daemon_config module applies on the
node). Its documentation is docker_daemon_problems.yml beside this file."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.module_utils.docker_daemon import has_validate_flag
from ansible_collections.lockstep.gpu.plugins.module_utils.docker_daemon_rules import check_any_engine, check_dockerd_20_10


def docker_daemon_problems(settings, engine_version=None):
    """Why dockerd would refuse ``settings`` as daemon.json; empty when it would not.

    ``engine_version``: the engine the node will run (e.g. "20.10" for
    Debian 12's docker.io). Engines without ``dockerd --validate`` (before
    23.0) get dockerd 20.10's option table and value rules; every engine gets
    the engine-independent checks. Runtime binaries are not looked for: they
    are installed later.
    """
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError(f"docker_daemon_problems: expects the daemon.json settings (a dict), got {settings!r}")
    config = dict(settings)
    problems = []
    version = str(engine_version) if engine_version else None
    if version and not has_validate_flag(version):
        problems.extend(check_dockerd_20_10(config))
    errors, _warnings = check_any_engine(config, path_exists=lambda path: True)
    problems.extend(errors)
    return problems


class FilterModule:
    """daemon.json checks for the preflight."""

    def filters(self):
        return {"docker_daemon_problems": docker_daemon_problems}
