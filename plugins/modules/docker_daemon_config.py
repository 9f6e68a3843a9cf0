#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merge settings into /etc/docker/daemon.json, validated before it is written."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: docker_daemon_config
short_description: Merge settings into Docker's daemon.json, validated before it is installed
description:
  - Reads the node's C(daemon.json), merges O(settings) into it recursively (keys
    it does not name survive; lists are replaced, except C(exec-opts), which is
    merged by option name), removes O(remove) and writes the result with sorted
    keys - only if it differs.
  - The candidate is validated before it replaces the file, so a bad value never
    reaches a running dockerd. Engines from Docker 23 on validate it themselves
    (C(dockerd --validate --config-file <candidate>)). Older engines - Debian 12's
    C(docker.io) is 20.10 - have no such flag, so the module checks the candidate
    against dockerd 20.10's own option table (every option name and its JSON type,
    as dockerd 20.10 loads them) and the values dockerd 20.10 rejects when it loads
    or starts.
  - On every engine it also rejects options that dockerd's systemd unit already sets
    on the command line (dockerd refuses to start when a directive is given both as
    a flag and in the file, e.g. C(hosts) with C(-H fd://)), a relative C(data-root),
    an unknown C(native.cgroupdriver), log options the C(json-file) and C(local)
    drivers reject, and a default runtime whose binary does not exist.
  - "Errors name the option, e.g. C(daemon.json option 'live-restore': must be a JSON
    boolean, got the string \"yes\")."
  - The handler that restarts dockerd should be notified only when this module
    reports a change.
version_added: "0.1.0"
author: Lockstep contributors (@lockstep)
options:
  path:
    description: The daemon configuration file.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description:
      - Options to set, as dockerd names them in daemon.json. Dictionaries are merged
        recursively into the existing values; any other value replaces the existing one.
    type: dict
    default: {}
  replace:
    description: Top-level options whose dictionary value replaces the existing one instead of being merged (e.g. C(log-opts)).
    type: list
    elements: str
    default: []
  remove:
    description:
      - Options to remove. C(key) removes a top-level option; C(key.sub) removes one
        entry of a dictionary option (C(runtimes.nvidia)) or one C(exec-opts) entry by
        name (C(exec-opts.native.cgroupdriver)).
    type: list
    elements: str
    default: []
  validate:
    description:
      - C(auto) - C(dockerd --validate) on engines that have it (23 and later), the
        built-in dockerd 20.10 rules on older ones.
      - C(dockerd) - always C(dockerd --validate); C(builtin) - always the built-in rules;
        C(none) - only the engine-independent checks.
    type: str
    choices: [auto, dockerd, builtin, none]
    default: auto
  engine_version:
    description: The engine's version (e.g. C(20.10.24)). Default is what C(dockerd --version) prints.
    type: str
  unit:
    description: The systemd unit that runs dockerd; its command-line flags may not be repeated in the file. Empty skips this check.
    type: str
    default: docker.service
  backup:
    description: Keep a timestamped copy of the previous file.
    type: bool
    default: false
notes:
  - Supports check mode and diff mode; in check mode the candidate is validated but not written.
"""

EXAMPLES = r"""
- name: Docker's daemon settings, merged with what is there
  lockstep.gpu.docker_daemon_config:
    settings:
      data-root: /data/docker
      registry-mirrors: [https://mirror.example.com]
      log-driver: json-file
      log-opts: {max-size: 100m, max-file: "3"}
      exec-opts: [native.cgroupdriver=systemd]
      runtimes: {nvidia: {path: /usr/bin/nvidia-container-runtime, runtimeArgs: []}}
      default-runtime: nvidia
    replace: [log-opts]
  notify: Restart docker
"""

RETURN = r"""
config:
  description: The merged configuration (what the file holds after the task).
  returned: success
  type: dict
engine_version:
  description: The engine version the candidate was validated for; null where no dockerd was found.
  returned: always
  type: str
validated_with:
  description: What validated the candidate, e.g. C(dockerd --validate) or C(lockstep rules for dockerd 20.10).
  returned: always
  type: list
  elements: str
errors:
  description: Every problem found, each naming its option.
  returned: failure
  type: list
  elements: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lockstep.gpu.plugins.module_utils.docker_daemon import (
    ConfigError,
    command_line_keys,
    environment_file,
    has_validate_flag,
    merge,
    parse_engine_version,
    parse_existing,
    render,
)
from ansible_collections.lockstep.gpu.plugins.module_utils.docker_daemon_rules import check_any_engine, check_dockerd_20_10


# --------------------------------------------------------------------------
# The module
# --------------------------------------------------------------------------
def _unit_command_line_keys(module, unit: str) -> set:
    systemctl = module.get_bin_path("systemctl")
    if not unit or not systemctl:
        return set()
    rc, out, _err = module.run_command([systemctl, "show", "-p", "ExecStart", "-p", "EnvironmentFiles", unit])
    if rc != 0:
        return set()
    execstart = next((line[len("ExecStart="):] for line in out.splitlines() if line.startswith("ExecStart=")), "")
    env = {}
    for line in out.splitlines():
        if line.startswith("EnvironmentFiles="):
            env.update(environment_file(line[len("EnvironmentFiles="):].split(" ")[0].lstrip("-")))
    return command_line_keys(execstart, env) if execstart else set()


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/docker/daemon.json"),
            settings=dict(type="dict", default={}),
            replace=dict(type="list", elements="str", default=[]),
            remove=dict(type="list", elements="str", default=[]),
            validate=dict(type="str", default="auto", choices=["auto", "dockerd", "builtin", "none"]),
            engine_version=dict(type="str"),
            unit=dict(type="str", default="docker.service"),
            backup=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path = params["path"]
    result = dict(changed=False, path=path, validated_with=[], engine_version=None)

    try:
        with open(path, encoding="utf-8") as handle:
            before_text = handle.read()
    except FileNotFoundError:
        before_text = None
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {exc}", **result)
    try:
        existing = parse_existing(before_text or "", path)
    except ConfigError as exc:
        module.fail_json(msg=str(exc), **result)

    config = merge(existing, params["settings"], params["replace"], params["remove"])
    after_text = render(config)
    result["config"] = config
    if after_text == before_text:
        module.exit_json(**result)

    dockerd = module.get_bin_path("dockerd")
    version = params["engine_version"]
    if not version and dockerd:
        rc, out, err = module.run_command([dockerd, "--version"])
        version = parse_engine_version(out) if rc == 0 else None
    result["engine_version"] = version
    mode = params["validate"]
    if mode == "auto":
        mode = "dockerd" if has_validate_flag(version) else ("builtin" if version else "none")
        if not version:
            module.warn("no dockerd engine version found (is Docker installed?): only the "
                        "engine-independent checks ran on the new daemon.json")

    errors, warnings = [], []
    if mode == "builtin":
        errors.extend(check_dockerd_20_10(config))
        result["validated_with"].append("lockstep rules for dockerd 20.10")
    more_errors, warnings = check_any_engine(
        config, _unit_command_line_keys(module, params["unit"]),
        path_exists=(lambda p: True) if module.check_mode and not dockerd else None)
    errors.extend(more_errors)
    result["validated_with"].append("lockstep engine-independent checks")
    for warning in warnings:
        module.warn(warning)

    if errors:
        module.fail_json(msg=f"{path} not changed - the merged configuration is invalid: " + "; ".join(errors),
                         errors=errors, **result)

    if module._diff:
        result["diff"] = dict(before=before_text or "", after=after_text,
                              before_header=path, after_header=f"{path} (merged)")
    result["changed"] = True
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        if module.check_mode:
            directory = tempfile.gettempdir()
        else:
            os.makedirs(directory, 0o755)
    # The candidate lies next to the file so that installing it is an atomic rename.
    fd, candidate = tempfile.mkstemp(prefix=".daemon.json.", suffix=".candidate", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(after_text)
        os.chmod(candidate, 0o644)
        if mode == "dockerd":
            if not dockerd:
                module.fail_json(msg="validate=dockerd but no dockerd binary on the node", **result)
            rc, out, err = module.run_command([dockerd, "--validate", "--config-file", candidate])
            result["validated_with"].insert(0, "dockerd --validate")
            if rc != 0:
                message = (err or out).strip().replace(candidate, path + " (candidate)")
                module.fail_json(msg=f"{path} not changed - dockerd --validate rejected the merged configuration: {message}",
                                 errors=[message], **result)
        if module.check_mode:
            return module.exit_json(**result)
        if params["backup"] and before_text is not None:
            result["backup_file"] = module.backup_local(path)
        module.atomic_move(candidate, path)
        candidate = None
    finally:
        if candidate and os.path.exists(candidate):
            os.unlink(candidate)
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
