# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role docker (what roles/docker/tasks/preflight.yml checked in Jinja).

Not here: the checks of Docker's and NVIDIA's apt repositories and keys
(include_role apt_repo tasks_from: check), which stay in Jinja for now.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ansible_collections.lockstep.gpu.plugins.filter.docker import docker_daemon_problems
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import unsupported_release
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# Derived values of roles/docker/vars/main.yml: docker_daemon_managed is what
# tasks/daemon.yml writes into daemon.json (checked as is, not re-merged
# here), docker_preflight_engine the engine release the node will run, and
# docker_daemon_variables the daemon.json options that have their own variable.
VARIABLES: tuple[str, ...] = ("docker_daemon_managed", "docker_preflight_engine", "docker_daemon_variables")

# A Docker CE release as docker-ce's apt version carries it (26.1.4).
_CE_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
# What dockerd takes as a registry mirror: a root URL, no path, query or credentials.
_MIRROR = re.compile(r"https?://[^/?#@\s]+/?")
# An engine release has_validate_flag() can read (anything else: engine-independent checks only).
_ENGINE = re.compile(r"[0-9]+(\.[0-9]+)*")
# The top-level option a docker_daemon_problems message names ("daemon.json option 'log-opts.max-size': ...").
_OPTION = re.compile(r"daemon\.json option '([^'.\[]+)")
# Options the role fills from a variable that docker_daemon_variables does not list.
_FILLED_BY = {"runtimes": "docker_nvidia_runtime_path", "exec-opts": "docker_cgroup_driver"}


def probe(ctx, host) -> dict:
    """docker_users' accounts on the node (what getent passwd answered)."""
    users = ctx.var(host, "docker_users")
    names = [user for user in users if isinstance(user, str)] if isinstance(users, list) else []
    return {"users": names} if names else {}


def _platform(ctx, host):
    """Refuse an unsupported distribution (Docker's and NVIDIA's repositories, the engine table)."""
    return unsupported_release(ctx, "docker", [host])


def _ce_version(ctx, host):
    """Refuse a Docker CE version that is not X.Y.Z (docker_engine_source docker pins docker-ce to it)."""
    if ctx.var(host, "docker_engine_source") != "docker" or not ctx.has(host, "docker_ce_version"):
        return
    version = ctx.var(host, "docker_ce_version")
    if not isinstance(version, str) or not _CE_VERSION.fullmatch(version):
        yield Problem("docker_ce_version", version, "not a Docker CE release such as 26.1.4 "
                      "(docker_engine_source: docker pins docker-ce to it)", host)


def _default_runtime(ctx, host):
    """Refuse the nvidia default runtime without the nvidia runtime."""
    if not (ctx.has(host, "docker_nvidia_runtime") and ctx.has(host, "docker_nvidia_default_runtime")):
        return
    if ctx.var(host, "docker_nvidia_default_runtime") is True and ctx.var(host, "docker_nvidia_runtime") is False:
        yield Problem("docker_nvidia_default_runtime", "true",
                      "docker_nvidia_runtime is false on this node: the nvidia runtime must be installed "
                      "(docker_nvidia_runtime: true, or put the node in the gpu group) before it can be "
                      "Docker's default", host)


def _data_root(ctx, host):
    """Refuse a relative data root (dockerd never comes up with one)."""
    if not ctx.has(host, "docker_data_root"):
        return
    root = ctx.var(host, "docker_data_root")
    if not isinstance(root, str) or not root.startswith("/"):
        yield Problem("docker_data_root", root,
                      "not an absolute path (dockerd never comes up with a relative one)", host)


def _mirrors(ctx, host):
    """Refuse registry mirrors dockerd rejects."""
    mirrors = ctx.var(host, "docker_registry_mirrors")
    for mirror in mirrors if isinstance(mirrors, list) else ():
        if not isinstance(mirror, str) or not _MIRROR.fullmatch(mirror):
            yield Problem("docker_registry_mirrors", mirror,
                          "an entry that is not a registry's root URL: http:// or https://, without path, "
                          "query or credentials (e.g. https://mirror.example.com)", host)


def _options(ctx, host) -> Mapping:
    options = ctx.var(host, "docker_daemon_options")
    return options if isinstance(options, Mapping) else {}


def _own_variables(ctx, host):
    """Refuse daemon options that have their own variable."""
    variables = ctx.var(host, "docker_daemon_variables")
    if not isinstance(variables, Mapping):
        return
    for key, value in _options(ctx, host).items():
        if isinstance(key, str) and key in variables:
            yield Problem(f"docker_daemon_options.{key}", value,
                          f"'{key}' has its own variable: set it through {variables[key]} instead", host)


def _cgroup_driver(ctx, host):
    """Refuse a cgroup driver in docker_daemon_options' exec-opts (docker_cgroup_driver sets it)."""
    opts = _options(ctx, host).get("exec-opts", [])
    entries = opts if isinstance(opts, list) else [opts]
    if any(isinstance(entry, str) and "native.cgroupdriver" in entry for entry in entries):
        yield Problem("docker_daemon_options.exec-opts", opts,
                      "sets native.cgroupdriver; set docker_cgroup_driver (systemd or cgroupfs) instead", host)


def _plain(value) -> bool:
    """A string or a scalar (what the role can write as a daemon.json log option string)."""
    return not isinstance(value, Mapping) and (isinstance(value, str) or not isinstance(value, Iterable))


def _log_opts(ctx, host):
    """Refuse log options that are not plain values."""
    opts = ctx.var(host, "docker_log_opts")
    for key, value in opts.items() if isinstance(opts, Mapping) else ():
        if not _plain(value):
            yield Problem(f"docker_log_opts.{key}", value, "not a string or a number "
                          "(dockerd takes strings, the role converts numbers)", host)


def _smoke_image(ctx, host):
    """Refuse a GPU smoke test without an image."""
    if not (ctx.var(host, "docker_smoke_test") is True and ctx.var(host, "docker_nvidia_runtime") is True):
        return
    image = ctx.var(host, "docker_smoke_image")
    if ctx.has(host, "docker_smoke_image") and not (isinstance(image, str) and image.strip()):
        yield Problem("docker_smoke_image", image, "empty while docker_smoke_test is on: "
                      "name the CUDA image to run nvidia-smi in", host)


def _users(ctx, host):
    """Refuse docker_users that have no account on the node (probe users)."""
    found = ctx.probe(host).get("users")
    if not isinstance(found, Mapping):
        return  # not asked (no docker_users) or not answered
    for user in probe(ctx, host).get("users", ()):
        if found.get(user) is False:
            yield Problem("docker_users", user, "no account on the node has this name; create the user first", host)


# The checks of values that go into daemon.json: where one refuses a value,
# the merged file is not checked too (the Jinja stopped at the first failed
# assert; dockerd's rules would name the same value again, or trip on it).
_DAEMON_INPUTS = (_default_runtime, _data_root, _mirrors, _own_variables, _cgroup_driver, _log_opts)


def _blamed(ctx, host, message: str):
    """The variable (and its value) that put the option a message names into daemon.json."""
    options = _options(ctx, host)
    found = _OPTION.match(message)
    option = found.group(1) if found else None
    if option in options:
        return f"docker_daemon_options.{option}", options[option]
    variables = ctx.var(host, "docker_daemon_variables")
    variable = (variables.get(option) if isinstance(variables, Mapping) else None) or _FILLED_BY.get(option)
    if variable:
        return variable, ctx.var(host, variable)
    return "docker_daemon_options", dict(options)


def _daemon_json(ctx, host):
    """Refuse daemon.json settings dockerd would reject (filter docker_daemon_problems' rules)."""
    managed = ctx.var(host, "docker_daemon_managed")
    if not isinstance(managed, Mapping) or any(any(check(ctx, host)) for check in _DAEMON_INPUTS):
        return
    engine = str(ctx.var(host, "docker_preflight_engine") or "")
    # A docker_ce_version that is no release (reported above) gets the engine-independent checks only.
    known = engine if _ENGINE.fullmatch(engine) else None
    try:
        messages = docker_daemon_problems(managed, known)
    except (TypeError, ValueError, AttributeError, KeyError) as error:  # a value no rule foresaw
        messages = [f"daemon.json could not be checked ({error})"]
    for message in messages:
        variable, value = _blamed(ctx, host, message)
        yield Problem(variable, value, f"{message}; dockerd (Docker {engine or 'unknown'}) would refuse the "
                      "/etc/docker/daemon.json the role writes", host)


def _on_every_host(check):
    """The rule that runs a per-host check on every node of the play."""
    def rule(ctx):
        for host in ctx.hosts:
            yield from check(ctx, host)
    rule.__name__ = rule.__qualname__ = check.__name__
    rule.__doc__ = check.__doc__
    return rule


RULES = tuple(_on_every_host(check) for check in (
    _platform, _ce_version, _default_runtime, _data_root, _mirrors, _own_variables,
    _cgroup_driver, _log_opts, _smoke_image, _users, _daemon_json))
