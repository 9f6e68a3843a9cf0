# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role conda (what roles/conda/tasks/preflight.yml checked in Jinja)."""

from __future__ import annotations

import os
import re

import yaml

from ansible_collections.lockstep.gpu.plugins.module_utils.conda import LOCK_FORMAT
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem
from ansible_collections.lockstep.gpu.plugins.plugin_utils.validate import short

# conda_channels is the cluster contract's (roles/cluster): the channels an
# environment without its own was solved against.
VARIABLES: tuple[str, ...] = ("conda_channels",)

# What scripts/conda-lock accepts: an environment name, a Python release, a pinned pip package.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PYTHON = re.compile(r"^3\.[0-9]+$")
_PIP = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")


def _envs(ctx, host) -> list:
    """host's conda_environments (spec-converted), [] when invalid."""
    envs = ctx.var(host, "conda_environments", [])
    return envs if isinstance(envs, list) else []


def _raw_envs(ctx, host, count: int) -> list | None:
    """conda_environments as the inventory wrote it, when it lines up with the converted list."""
    raw = getattr(ctx, "raw", None) or {}
    envs = raw.get(host, {}).get("conda_environments") if isinstance(raw.get(host), dict) else None
    return envs if isinstance(envs, list) and len(envs) == count else None


def _label(env, index: int) -> str:
    """conda_environments[train], or [index] when the name is not one."""
    name = env.get("name") if isinstance(env, dict) else None
    return f"conda_environments[{name if isinstance(name, str) and _NAME.match(name) else index}]"


def _number_problems(ctx, host):
    # The spec turns python: 3.10 (the YAML float 3.1) into "3.1": only the raw value shows it.
    envs = _envs(ctx, host) if ctx.has(host, "conda_environments") else []
    for index, env in enumerate(_raw_envs(ctx, host, len(envs)) or []):
        python = env.get("python") if isinstance(env, dict) else None
        if isinstance(python, (int, float)) and not isinstance(python, bool):
            yield Problem(f"{_label(env, index)}.python", python,
                          f"a YAML number, not a version: quote it ('{python}', or '{python}0' if you meant "
                          f"that release), since YAML reads 3.10 as 3.1", host)


def _shape_problems(ctx, host):
    envs = _envs(ctx, host) if ctx.has(host, "conda_environments") else []
    for index, env in enumerate(envs):
        if not isinstance(env, dict):
            continue  # the argument spec's (elements: dict)
        label, name = _label(env, index), env.get("name")
        if not (isinstance(name, str) and _NAME.match(name)):
            yield Problem(f"{label}.name", name, "an environment needs a name of letters, digits, . _ - "
                          "(starting with a letter or digit)", host)
        if not _PYTHON.match(str(env.get("python"))):
            yield Problem(f"{label}.python", env.get("python"), 'a Python release written as "3.X", e.g. "3.11"', host)
        pip = env.get("pip") or []
        for package in pip if isinstance(pip, list) else [pip]:
            if not (isinstance(package, str) and _PIP.match(package)):
                yield Problem(f"{label}.pip", package, "pip packages pinned as name==version, e.g. six==1.17.0", host)


def _env_names(ctx, host) -> list:
    return [env.get("name") for env in _envs(ctx, host) if isinstance(env, dict)]


def _twice(names: list) -> list[str]:
    """Names declared more than once (list.count compares with ==: nothing is hashed)."""
    return sorted({str(name) for name in names if names.count(name) > 1})


def _names_problems(ctx, host):
    if not ctx.has(host, "conda_environments"):
        return
    names = _env_names(ctx, host)
    twice = _twice(names)
    if twice:
        yield Problem("conda_environments", names, f"environment names must be unique ({', '.join(twice)} "
                      "declared more than once)", host)
    default = ctx.var(host, "conda_default_env", "")
    if ctx.has(host, "conda_default_env") and default != "" and default not in names:
        yield Problem("conda_default_env", default, f"one of the conda_environments names {names} or \"\"", host)


def _python_numbers(ctx):
    """Python versions written as YAML numbers (3.10 read as 3.1)."""
    for host in ctx.hosts:
        yield from _number_problems(ctx, host)


def _declarations(ctx):
    """Malformed environments: name, python as "3.X", pip pinned as name==version."""
    for host in ctx.hosts:
        yield from _shape_problems(ctx, host)


def _names(ctx):
    """Unique environment names; conda_default_env one of them or ""."""
    for host in ctx.hosts:
        yield from _names_problems(ctx, host)


def _read_lock(path: str) -> tuple[dict | None, str]:
    """The lock at path, or None and what is wrong with it."""
    again = f"solve the environments first with scripts/conda-lock {os.path.dirname(path)}"
    # The lock is on the controller (the role's stat and lookup('file') ran there): plain Python, no probe.
    if not os.path.exists(path):
        return None, f"does not exist on the controller: {again}"
    try:
        with open(path, encoding="utf-8") as stream:
            lock = yaml.safe_load(stream)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        return None, f"cannot be read as YAML ({str(error).splitlines()[0][:120]}): {again}"
    if not isinstance(lock, dict) or lock.get("format", 0) != LOCK_FORMAT or "installer" not in lock \
            or not isinstance(lock.get("environments"), dict):
        return None, f"is not a lock of format {LOCK_FORMAT} with an installer and environments: {again}"
    return lock, ""


def _unset(env: dict) -> dict:
    """env less what the spec adds for an unset option (None; [] packages or pip, as conda-lock reads them)."""
    return {k: v for k, v in env.items() if v is not None and not (k in ("packages", "pip") and v == [])}


def _declared(ctx, host) -> tuple[list, bool]:
    """The environments as the inventory wrote them (exact: True), else as converted (False)."""
    envs = _envs(ctx, host)
    raw = _raw_envs(ctx, host, len(envs))
    return (raw, True) if raw is not None else ([env for env in envs if isinstance(env, dict)], False)


def _mismatch(lock: dict, env: dict, channels, exact: bool) -> str:
    """Why the lock does not lock env as declared now, or ""."""
    name = env.get("name")
    entry = lock["environments"].get(name) if isinstance(name, str) else None
    if not isinstance(entry, dict):
        return "it has no such environment"
    declared = entry.get("declared")
    # The lock records the declaration as written; a converted one is compared less the spec's additions.
    if not exact and isinstance(declared, dict):
        declared, env = _unset(declared), _unset(env)
    if declared != env:
        if not isinstance(declared, dict):
            return "its entry records no declaration"
        changed = sorted(str(k) for k in set(declared) | set(env)
                         if (k in declared) != (k in env) or declared.get(k) != env.get(k))
        return f"{', '.join(changed)} changed since it was solved"
    # scripts/conda-lock solves an environment without channels on conda_channels.
    wanted = env.get("channels") or channels
    if wanted is not None and entry.get("channels") != wanted:
        return f"it was solved on channels {short(entry.get('channels'))}, not {short(wanted)}"
    return ""


def _declarations_ok(ctx, host) -> bool:
    """Declarations scripts/conda-lock would accept: the lock is compared only with those."""
    return not (any(_number_problems(ctx, host)) or any(_shape_problems(ctx, host))
                or _twice(_env_names(ctx, host)))


def _lock(ctx):
    """conda_lock_file exists and locks every environment as declared now."""
    locks: dict[str, tuple] = {}  # read once per path, not once per node
    for host in ctx.hosts:
        path = ctx.var(host, "conda_lock_file")
        if not (_envs(ctx, host) and isinstance(path, str) and path and _declarations_ok(ctx, host)):
            continue
        if path not in locks:
            locks[path] = _read_lock(path)
        lock, wrong = locks[path]
        if lock is None:
            yield Problem("conda_lock_file", path, wrong, host)
            continue
        channels = ctx.var(host, "conda_channels") if ctx.has(host, "conda_channels") else None
        envs, exact = _declared(ctx, host)
        for env in envs:
            why = _mismatch(lock, env, channels, exact) if isinstance(env, dict) else ""
            if why:
                yield Problem("conda_lock_file", path, f"does not lock conda_environments {env.get('name')} as "
                              f"declared now ({why}): run scripts/conda-lock {os.path.dirname(path)}", host)


RULES = (_python_numbers, _declarations, _names, _lock)
