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
author: Lockstep contributors
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
  docker_daemon_config:
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

import copy
import ipaddress
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule

# --------------------------------------------------------------------------
# dockerd 20.10's daemon.json options and their JSON types.
#
# dockerd 20.10 accepts a key when it is the name of one of its command-line
# flags (flags.Lookup), the configuration name of a "named" flag
# (--label -> labels, --add-runtime -> runtimes, ...) or one of a few keys it
# skips (features, builder, deprecated-key-path); anything else fails with
# "the following directives don't match any configuration option". The value
# is then decoded into the Config struct (wrong JSON types fail with "json:
# cannot unmarshal ..."). The table below was taken from `dockerd --help` and
# the hidden/named options of Debian 12's docker.io 20.10.24+dfsg1-1+deb12u1+b6
# and checked key by key against that dockerd (tests/unit/test_docker_daemon_config.py
# lists the verdicts the real daemon gave).
# --------------------------------------------------------------------------
BOOL = "bool"
INT = "int"
STR = "string"
LIST = "list"
STRMAP = "strmap"
DOCKERD_20_10 = {
    "allow-nondistributable-artifacts": LIST,
    "api-cors-header": STR,
    "authorization-plugins": LIST,
    "bip": STR,
    "bridge": STR,
    "builder": "builder",
    "cgroup-parent": STR,
    "cluster-advertise": STR,
    "cluster-store": STR,
    "cluster-store-opts": STRMAP,
    "containerd": STR,
    "containerd-namespace": STR,
    "containerd-plugins-namespace": STR,
    "cpu-rt-period": INT,
    "cpu-rt-runtime": INT,
    "cri-containerd": BOOL,
    "data-root": STR,
    "debug": BOOL,
    "default-address-pools": "address-pools",
    "default-cgroupns-mode": STR,
    "default-gateway": STR,
    "default-gateway-v6": STR,
    "default-ipc-mode": STR,
    "default-runtime": STR,
    "default-shm-size": STR,
    "default-ulimits": "ulimits",
    "deprecated-key-path": STR,
    "dns": LIST,
    "dns-opts": LIST,
    "dns-search": LIST,
    "exec-opts": LIST,
    "exec-root": STR,
    "experimental": BOOL,
    "features": "features",
    "fixed-cidr": STR,
    "fixed-cidr-v6": STR,
    "graph": STR,
    "group": STR,
    "host-gateway-ip": STR,
    "hosts": LIST,
    "icc": BOOL,
    "init": BOOL,
    "init-path": STR,
    "insecure-registries": LIST,
    "ip": STR,
    "ip-forward": BOOL,
    "ip-masq": BOOL,
    "ip6tables": BOOL,
    "iptables": BOOL,
    "ipv6": BOOL,
    "labels": LIST,
    "live-restore": BOOL,
    "log-driver": STR,
    "log-level": STR,
    "log-opts": STRMAP,
    "max-concurrent-downloads": INT,
    "max-concurrent-uploads": INT,
    "max-download-attempts": INT,
    "metrics-addr": STR,
    "mtu": INT,
    "network-control-plane-mtu": INT,
    "network-diagnostic-port": INT,
    "no-new-privileges": BOOL,
    "node-generic-resources": LIST,
    "oom-score-adjust": INT,
    "pidfile": STR,
    "raw-logs": BOOL,
    "registry-mirrors": LIST,
    "restart": BOOL,
    "rootless": BOOL,
    "runtimes": "runtimes",
    "seccomp-profile": STR,
    "selinux-enabled": BOOL,
    "shutdown-timeout": INT,
    "storage-driver": STR,
    "storage-opts": LIST,
    "swarm-default-advertise-addr": STR,
    "tls": BOOL,
    "tlscacert": STR,
    "tlscert": STR,
    "tlskey": STR,
    "tlsverify": BOOL,
    "userland-proxy": BOOL,
    "userland-proxy-path": STR,
    "userns-remap": STR,
}
# Flags that are never configuration (dockerd takes them, they mean nothing in a file).
COMMAND_LINE_ONLY = {"config-file", "help", "version", "validate"}
# Options added by later engines, named in the error so users know why.
NEWER_OPTIONS = {
    "cdi-spec-dirs": "23", "default-network-opts": "24", "http-proxy": "23", "https-proxy": "23",
    "no-proxy": "23", "proxies": "23", "host-gateway-ips": "27", "log-format": "25",
    "min-api-version": "25", "firewall-backend": "28", "bridge-accept-fwmark": "28",
    "containerd-plugin-namespace": "23", "swarm-raft-heartbeat-tick": "24",
}
# dockerd's flags whose configuration name differs from the flag's, and its short flags.
NAMED_FLAGS = {
    "host": "hosts", "label": "labels", "exec-opt": "exec-opts", "log-opt": "log-opts",
    "storage-opt": "storage-opts", "dns-opt": "dns-opts", "registry-mirror": "registry-mirrors",
    "insecure-registry": "insecure-registries", "authorization-plugin": "authorization-plugins",
    "default-ulimit": "default-ulimits", "node-generic-resource": "node-generic-resources",
    "default-address-pool": "default-address-pools", "cluster-store-opt": "cluster-store-opts",
    "add-runtime": "runtimes",
}
SHORT_FLAGS = {"H": "hosts", "D": "debug", "G": "group", "l": "log-level", "p": "pidfile",
               "b": "bridge", "s": "storage-driver", "g": "graph"}
# dockerd merges "runtimes" from flags and file instead of refusing the duplicate.
MERGED_WITH_FLAGS = {"runtimes"}

BUILTIN_LOG_DRIVERS = {"awslogs", "etwlogs", "fluentd", "gcplogs", "gelf", "journald",
                       "json-file", "local", "logentries", "none", "splunk", "syslog"}
# Options every log driver takes (dockerd strips them before the driver sees them).
GENERIC_LOG_OPTS = {"mode", "max-buffer-size"}
LOG_DRIVER_OPTS = {
    "json-file": {"max-file", "max-size", "compress", "labels", "labels-regex", "env", "env-regex", "tag"},
    "local": {"max-file", "max-size", "compress"},
}
STORAGE_DRIVERS_20_10 = {"aufs", "btrfs", "devicemapper", "fuse-overlayfs", "overlay", "overlay2", "vfs", "zfs"}
LOG_LEVELS = {"panic", "fatal", "error", "warn", "warning", "info", "debug", "trace"}
CGROUP_DRIVERS = {"systemd", "cgroupfs"}
# go-units' FromHumanSize / RAMInBytes syntax: "100m", "1.5g", "10 MB", "512".
HUMAN_SIZE = re.compile(r"^(\d+(\.\d+)*) ?([kKmMgGtTpP])?[iI]?[bB]?$")
GO_BOOL = {"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"}
ENGINE_VERSION = re.compile(r"version\s+v?(\d+)\.(\d+)(?:\.(\d+))?")


class ConfigError(Exception):
    """The existing daemon.json cannot be read."""


# --------------------------------------------------------------------------
# Merging
# --------------------------------------------------------------------------
def _exec_opt_name(opt) -> str:
    return str(opt).split("=", 1)[0].strip()


def merge_exec_opts(existing: list, managed: list) -> list:
    """exec-opts merged by option name: managed entries replace existing ones
    of the same name in place; the others are kept; new ones are appended."""
    wanted = {}
    for opt in managed:
        wanted[_exec_opt_name(opt)] = opt
    result, placed = [], set()
    for opt in existing:
        name = _exec_opt_name(opt)
        if name in wanted:
            if name not in placed:
                result.append(wanted[name])
                placed.add(name)
        else:
            result.append(opt)
    result.extend(opt for name, opt in wanted.items() if name not in placed)
    return result


def _deep_merge(base: dict, update: dict) -> dict:
    result = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def merge(existing: dict, settings: dict, replace=(), remove=()) -> dict:
    """``existing`` with ``settings`` merged in and ``remove`` taken out."""
    result = copy.deepcopy(existing)
    for key, value in settings.items():
        current = result.get(key)
        if key == "exec-opts" and isinstance(value, list) and isinstance(current, list):
            result[key] = merge_exec_opts(current, value)
        elif key not in replace and isinstance(value, dict) and isinstance(current, dict):
            result[key] = _deep_merge(current, value)
        else:
            result[key] = copy.deepcopy(value)
    for item in remove:
        key, _, sub = item.partition(".")
        if not sub:
            result.pop(key, None)
        elif key == "exec-opts" and isinstance(result.get(key), list):
            result[key] = [o for o in result[key] if _exec_opt_name(o) != sub]
        elif isinstance(result.get(key), dict):
            result[key].pop(sub, None)
    return result


def render(config: dict) -> str:
    """How the file is written: sorted keys, two-space indent, final newline."""
    return json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def parse_existing(text: str, path: str = "daemon.json") -> dict:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"the existing {path} is not valid JSON ({exc}); fix or remove it - nothing was changed") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the existing {path} holds a JSON {type(data).__name__}, not an object; nothing was changed")
    return data


# --------------------------------------------------------------------------
# Checks. Each returns a list of messages naming the option.
# --------------------------------------------------------------------------
def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "the number %s" % value
    if isinstance(value, float):
        return "the number %s" % value
    if isinstance(value, str):
        return "the string %s" % json.dumps(value)
    if isinstance(value, list):
        return "a list"
    return "an object"


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt(name: str) -> str:
    return f"daemon.json option '{name}'"


def _check_type(name: str, kind: str, value) -> list:
    """Errors for ``value`` of option ``name`` whose JSON type is ``kind``."""
    wrong = f"{_opt(name)}: must be %s, got {_json_type(value)}"
    if kind == BOOL:
        return [] if isinstance(value, bool) else [wrong % "a JSON boolean (true or false)"]
    if kind == INT:
        return [] if _is_int(value) else [wrong % "a JSON integer"]
    if kind == STR:
        return [] if isinstance(value, str) else [wrong % "a JSON string"]
    if kind == LIST:
        if not isinstance(value, list):
            return [wrong % "a JSON list of strings"]
        return [f"{_opt(name)}: entry {i} must be a string, got {_json_type(v)}"
                for i, v in enumerate(value) if not isinstance(v, str)]
    if kind == STRMAP:
        if not isinstance(value, dict):
            return [wrong % "a JSON object of strings"]
        return [f"{_opt(name + '.' + k)}: must be a JSON string (dockerd takes \"{v}\", not {v}), got {_json_type(v)}"
                if isinstance(v, (int, float, bool)) else
                f"{_opt(name + '.' + k)}: must be a JSON string, got {_json_type(v)}"
                for k, v in value.items() if not isinstance(v, str)]
    if kind == "features":
        if not isinstance(value, dict):
            return [wrong % "a JSON object of booleans"]
        return [f"{_opt(name + '.' + k)}: must be a JSON boolean, got {_json_type(v)}"
                for k, v in value.items() if not isinstance(v, bool)]
    if kind == "builder":
        return [] if isinstance(value, dict) else [wrong % "a JSON object"]
    if kind == "runtimes":
        if not isinstance(value, dict):
            return [wrong % 'a JSON object, e.g. {"nvidia": {"path": "/usr/bin/nvidia-container-runtime"}}']
        errors = []
        for rname, runtime in value.items():
            where = f"{name}.{rname}"
            if not isinstance(runtime, dict):
                errors.append(f"{_opt(where)}: must be a JSON object with path and runtimeArgs, got {_json_type(runtime)}")
                continue
            unknown = sorted(set(runtime) - {"path", "runtimeArgs"})
            if unknown:
                errors.append(f"{_opt(where + '.' + unknown[0])}: unknown runtime setting (dockerd 20.10 knows path and runtimeArgs)")
            if not isinstance(runtime.get("path"), str) or not runtime.get("path"):
                errors.append(f"{_opt(where + '.path')}: must be a non-empty JSON string, got {_json_type(runtime.get('path'))}")
            args = runtime.get("runtimeArgs", [])
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                errors.append(f"{_opt(where + '.runtimeArgs')}: must be a JSON list of strings")
        return errors
    if kind == "ulimits":
        if not isinstance(value, dict):
            return [wrong % 'a JSON object, e.g. {"nofile": {"Name": "nofile", "Hard": 65536, "Soft": 65536}}']
        errors = []
        for uname, limit in value.items():
            where = f"{name}.{uname}"
            if not isinstance(limit, dict):
                errors.append(f"{_opt(where)}: must be a JSON object with Name, Hard and Soft")
                continue
            for field, field_value in limit.items():
                lowered = field.lower()
                if lowered == "name" and not isinstance(field_value, str):
                    errors.append(f"{_opt(where + '.' + field)}: must be a JSON string, got {_json_type(field_value)}")
                elif lowered in ("hard", "soft") and not _is_int(field_value):
                    errors.append(f"{_opt(where + '.' + field)}: must be a JSON integer, got {_json_type(field_value)}")
        return errors
    if kind == "address-pools":
        if not isinstance(value, list):
            return [wrong % 'a JSON list, e.g. [{"base": "172.80.0.0/16", "size": 24}]']
        errors = []
        for i, pool in enumerate(value):
            where = f"{name}[{i}]"
            if not isinstance(pool, dict):
                errors.append(f"{_opt(where)}: must be a JSON object with base and size")
                continue
            if "base" in pool and not isinstance(pool["base"], str):
                errors.append(f"{_opt(where + '.base')}: must be a JSON string, got {_json_type(pool['base'])}")
            if "size" in pool and not _is_int(pool["size"]):
                errors.append(f"{_opt(where + '.size')}: must be a JSON integer, got {_json_type(pool['size'])}")
        return errors
    return []


def check_dockerd_20_10(config: dict) -> list:
    """What dockerd 20.10 rejects when it loads or starts with ``config``
    (the checks ``dockerd --validate`` does on later engines, and more)."""
    errors = []
    for name in sorted(config):
        value = config[name]
        if name in COMMAND_LINE_ONLY:
            errors.append(f"{_opt(name)}: is a dockerd command-line flag, not a configuration option")
        elif name in NAMED_FLAGS:
            # dockerd 20.10 accepts the flag's name and silently ignores its value.
            errors.append(f"{_opt(name)}: is the name of dockerd's command-line flag --{name}; in daemon.json "
                          f"it is '{NAMED_FLAGS[name]}' (dockerd 20.10 would silently ignore '{name}')")
        elif name not in DOCKERD_20_10:
            hint = (f" (it needs Docker {NEWER_OPTIONS[name]} or later)" if name in NEWER_OPTIONS else "")
            errors.append(f"{_opt(name)}: is not a dockerd 20.10 configuration option{hint}")
        else:
            errors.extend(_check_type(name, DOCKERD_20_10[name], value))
    if errors:
        return errors

    runtimes = config.get("runtimes") or {}
    if "runc" in runtimes:
        errors.append(f"{_opt('runtimes.runc')}: the runtime name 'runc' is reserved by dockerd")
    default_runtime = config.get("default-runtime")
    if default_runtime and default_runtime != "runc" and default_runtime not in runtimes:
        errors.append(f"{_opt('default-runtime')}: runtime '{default_runtime}' is not defined in 'runtimes' "
                      f"(defined: {', '.join(sorted(runtimes)) or 'none'})")
    level = config.get("log-level")
    if level and level.lower() not in LOG_LEVELS:
        errors.append(f"{_opt('log-level')}: '{level}' is not a log level ({', '.join(sorted(LOG_LEVELS))})")
    for name in ("max-concurrent-downloads", "max-concurrent-uploads"):
        if name in config and config[name] < 0:
            errors.append(f"{_opt(name)}: must not be negative, got {config[name]}")
    if "max-download-attempts" in config and config["max-download-attempts"] <= 0:
        errors.append(f"{_opt('max-download-attempts')}: must be at least 1, got {config['max-download-attempts']}")
    mode = config.get("default-cgroupns-mode")
    if mode and mode not in ("host", "private"):
        errors.append(f"{_opt('default-cgroupns-mode')}: '{mode}' is invalid; use \"host\" or \"private\"")
    for i, server in enumerate(config.get("dns", [])):
        if not _is_ip(server):
            errors.append(f"{_opt('dns')}: entry {i} '{server}' is not an IP address")
    for name in ("ip", "default-gateway", "default-gateway-v6", "host-gateway-ip"):
        if config.get(name) and not _is_ip(config[name]):
            errors.append(f"{_opt(name)}: '{config[name]}' is not an IP address")
    labels = {}
    for label in config.get("labels", []):
        key, sep, val = label.partition("=")
        if not sep:
            errors.append(f"{_opt('labels')}: '{label}' is not key=value")
        elif key in labels and labels[key] != val:
            errors.append(f"{_opt('labels')}: conflicting values for label '{key}' ('{labels[key]}' and '{val}')")
        labels.setdefault(key, val)
    if "default-shm-size" in config and not HUMAN_SIZE.match(config["default-shm-size"]):
        errors.append(f"{_opt('default-shm-size')}: '{config['default-shm-size']}' is not a size like \"64M\"")
    for i, mirror in enumerate(config.get("registry-mirrors", [])):
        problem = _mirror_problem(mirror)
        if problem:
            errors.append(f"{_opt('registry-mirrors')}: entry {i} '{mirror}' {problem}")
    driver = config.get("storage-driver")
    if driver and driver not in STORAGE_DRIVERS_20_10:
        errors.append(f"{_opt('storage-driver')}: '{driver}' is not a storage driver of dockerd 20.10 "
                      f"({', '.join(sorted(STORAGE_DRIVERS_20_10))})")
    return errors


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _mirror_problem(mirror: str):
    """What dockerd 20.10's ValidateMirror rejects, or None."""
    try:
        url = urlsplit(mirror)
    except ValueError:
        return "is not a URL"
    if url.scheme not in ("http", "https"):
        return "must be an http:// or https:// URL"
    if url.path not in ("", "/") or url.query or url.fragment:
        return "must not have a path, query or fragment (dockerd takes the registry's root URL)"
    if url.username or url.password:
        return "must not carry a user name or password"
    if not url.hostname:
        return "has no host"
    return None


def check_any_engine(config: dict, command_line_keys=(), path_exists=None) -> tuple:
    """Checks that hold for every engine version and that ``dockerd
    --validate`` does not make. Returns (errors, warnings)."""
    errors, warnings = [], []
    path_exists = path_exists or _runtime_found
    for key in sorted(set(command_line_keys) & set(config) - MERGED_WITH_FLAGS):
        errors.append(f"{_opt(key)}: is already set on dockerd's command line (systemd unit); "
                      "dockerd refuses to start when a directive is given both as a flag and in the file")
    for name in ("data-root", "exec-root", "pidfile"):
        value = config.get(name)
        if isinstance(value, str) and value and not value.startswith("/"):
            errors.append(f"{_opt(name)}: '{value}' must be an absolute path")
    exec_opts = config.get("exec-opts")
    if isinstance(exec_opts, list):
        for opt in exec_opts:
            if not isinstance(opt, str):
                continue
            key, sep, val = opt.partition("=")
            if not sep:
                errors.append(f"{_opt('exec-opts')}: '{opt}' is not name=value")
            elif key.strip() == "native.cgroupdriver" and val.strip() not in CGROUP_DRIVERS:
                errors.append(f"{_opt('exec-opts')}: native.cgroupdriver '{val}' is not supported (systemd or cgroupfs)")
    driver = config.get("log-driver", "json-file")
    opts = config.get("log-opts")
    if isinstance(driver, str) and driver not in BUILTIN_LOG_DRIVERS and not re.search(r"[:/]", driver):
        errors.append(f"{_opt('log-driver')}: '{driver}' is not a built-in log driver "
                      f"({', '.join(sorted(BUILTIN_LOG_DRIVERS))}) nor a plugin reference")
    if isinstance(opts, dict):
        errors.extend(_log_opts_problems(driver, opts))
    runtimes = config.get("runtimes") if isinstance(config.get("runtimes"), dict) else {}
    default_runtime = config.get("default-runtime")
    for rname, runtime in sorted(runtimes.items()):
        path = runtime.get("path") if isinstance(runtime, dict) else None
        if isinstance(path, str) and path and not path_exists(path):
            message = f"{_opt('runtimes.' + rname + '.path')}: runtime binary '{path}' not found on the node"
            if rname == default_runtime:
                errors.append(message + " - it is the default runtime, every container would fail")
            else:
                warnings.append(message)
    return errors, warnings


def _log_opts_problems(driver, opts: dict) -> list:
    errors = []
    allowed = LOG_DRIVER_OPTS.get(driver)
    for key, value in sorted(opts.items()):
        where = _opt(f"log-opts.{key}")
        if not isinstance(value, str):
            errors.append(f"{where}: must be a JSON string (\"{value}\"), got {_json_type(value)}")
            continue
        if allowed is not None and key not in allowed | GENERIC_LOG_OPTS:
            errors.append(f"{where}: unknown log option for the {driver} log driver "
                          f"({', '.join(sorted(allowed | GENERIC_LOG_OPTS))})")
        elif key == "mode" and value not in ("blocking", "non-blocking"):
            errors.append(f"{where}: '{value}' is not a logging mode (blocking or non-blocking)")
        elif key == "max-buffer-size" and not HUMAN_SIZE.match(value):
            errors.append(f"{where}: '{value}' is not a size like \"4m\"")
        elif allowed is None:
            continue
        elif key == "max-size" and (not HUMAN_SIZE.match(value) or float(HUMAN_SIZE.match(value).group(1)) <= 0):
            errors.append(f"{where}: '{value}' is not a positive size like \"100m\"")
        elif key == "max-file" and not (value.isdigit() and int(value) >= 1):
            errors.append(f"{where}: '{value}' is not a whole number of files of at least 1")
        elif key == "compress" and value not in GO_BOOL:
            errors.append(f"{where}: '{value}' is not a boolean (\"true\" or \"false\")")
    return errors


def _runtime_found(path: str) -> bool:
    if path.startswith("/"):
        return os.path.isfile(path) and os.access(path, os.X_OK)
    return shutil.which(path) is not None


def parse_engine_version(text: str):
    """``dockerd --version`` ("Docker version 20.10.24+dfsg1, build 5d6db84") -> "20.10.24"."""
    match = ENGINE_VERSION.search(text or "")
    if not match:
        return None
    return ".".join(g for g in match.groups() if g is not None)


def has_validate_flag(version) -> bool:
    """``dockerd --validate`` exists from Docker 23.0 on."""
    if not version:
        return False
    return int(version.split(".")[0]) >= 23


def command_line_keys(execstart: str, environment: dict | None = None) -> set:
    """Configuration keys set by dockerd's command line, from ``systemctl
    show -p ExecStart --value`` (or a plain command line)."""
    match = re.search(r"argv\[\]=(.*?)\s;", execstart)
    line = match.group(1) if match else execstart
    env = environment or {}
    line = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), line)
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    keys = set()
    for word in words[1:]:
        if word.startswith("--"):
            flag = word[2:].split("=", 1)[0]
            keys.add(NAMED_FLAGS.get(flag, flag))
        elif word.startswith("-") and len(word) >= 2:
            for letter in word[1:]:
                if letter in SHORT_FLAGS:
                    keys.add(SHORT_FLAGS[letter])
                    break
    return keys - COMMAND_LINE_ONLY


def _environment_file(path: str) -> dict:
    env = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = re.match(r"^\s*(?:export\s+)?(\w+)=(.*)$", line)
                if match:
                    try:
                        value = shlex.split(match.group(2), comments=True)
                    except ValueError:
                        continue
                    env[match.group(1)] = " ".join(value)
    except OSError:
        pass
    return env


# --------------------------------------------------------------------------
# The module
# --------------------------------------------------------------------------
def _unit_command_line_keys(module, unit: str) -> set:
    systemctl = module.get_bin_path("systemctl")
    if not unit or not systemctl:
        return set()
    rc, out, _ = module.run_command([systemctl, "show", "-p", "ExecStart", "-p", "EnvironmentFiles", unit])
    if rc != 0:
        return set()
    execstart = next((line[len("ExecStart="):] for line in out.splitlines() if line.startswith("ExecStart=")), "")
    env = {}
    for line in out.splitlines():
        if line.startswith("EnvironmentFiles="):
            env.update(_environment_file(line[len("EnvironmentFiles="):].split(" ")[0].lstrip("-")))
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
