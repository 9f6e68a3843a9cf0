# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What dockerd accepts in daemon.json: dockerd 20.10's option table and the
values it rejects (Debian 12's engine has no ``dockerd --validate``), and the
engine-independent checks (registry mirrors, log options, runtimes, options
also set on dockerd's command line). Standard library only (managed nodes)."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
from urllib.parse import urlsplit

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
