# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role nvidia_driver (what roles/nvidia_driver/tasks/preflight.yml checked in Jinja)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.module_utils.redact import redact_urls
from ansible_collections.lockstep.gpu.plugins.plugin_utils.os_facts import SUPPORTED, os_release
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import unsupported_release
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# Every rule reads spec options and facts only: the role's derived values
# (nvidia_driver_platform, nvidia_driver_os_release) are os_release() here.
VARIABLES: tuple[str, ...] = ()

# The role's per-distribution vars files (vars/Debian-12.yml, ...).
_VARS = Path(__file__).resolve().parents[3] / "roles" / "nvidia_driver" / "vars"
_BRANCH = re.compile(r"[0-9]{3}")
_VERSION = re.compile(r"[0-9]{3}\.[0-9]+(\.[0-9]+)?")
_BATCH = re.compile(r"[1-9][0-9]{0,5}|([1-9][0-9]?|100)%")
_MIRROR = re.compile(r"(https?|file)://\S+")


@functools.lru_cache(maxsize=None)
def _release_vars(name: str) -> dict:
    """vars/<name>.yml of the role (include_vars' file), {} when absent or unreadable."""
    if name not in SUPPORTED:  # a fact never picks a path outside the role's files
        return {}
    try:
        loaded = yaml.safe_load((_VARS / f"{name}.yml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _platform(ctx, host) -> dict | None:
    """The node's os_release() names, or None without usable facts (nothing to judge then)."""
    try:
        return os_release(ctx.facts.get(host, {}))
    except AnsibleFilterError:  # facts not gathered (or not a mapping)
        return None


def _written(ctx, host, name):
    """The value as the inventory wrote it (before the spec's conversion) when known."""
    return ctx.raw.get(host, {}).get(name, ctx.var(host, name))


def _supported(ctx):
    """Refuse an unsupported distribution (the role's package names exist for SUPPORTED only)."""
    return unsupported_release(ctx, "nvidia_driver")


def _source(ctx):
    """Refuse a driver source the node's distribution does not have (ubuntu on Debian, debian on Ubuntu)."""
    native = {"Debian": "debian", "Ubuntu": "ubuntu"}
    for host in ctx.hosts:
        platform = _platform(ctx, host)
        source = ctx.var(host, "nvidia_driver_source")
        if not (platform and platform["supported"] and ctx.has(host, "nvidia_driver_source")):
            continue
        if source in ("cuda", native[platform["distribution"]]):
            continue
        yield Problem("nvidia_driver_source", _written(ctx, host, "nvidia_driver_source"),
                      f"not available on {platform['name']}: use cuda (NVIDIA's repository) there, "
                      f"or {native[platform['distribution']]}", host)


def _is_branch(value) -> bool:
    return isinstance(value, str) and bool(_BRANCH.fullmatch(value))


def _branch_version(ctx):
    """Refuse a branch or version that is not a driver release, or a version of another branch."""
    for host in ctx.hosts:
        branch = ctx.var(host, "nvidia_driver_branch")
        if ctx.has(host, "nvidia_driver_branch") and not _is_branch(branch):
            yield Problem("nvidia_driver_branch", _written(ctx, host, "nvidia_driver_branch"),
                          "not a driver branch: three digits such as 535", host)
        version = ctx.var(host, "nvidia_driver_version")
        if not ctx.has(host, "nvidia_driver_version") or version == "":
            continue
        # Against a malformed branch (refused above) only the version's form is judged.
        known = branch if _is_branch(branch) else ""
        form = isinstance(version, str) and _VERSION.fullmatch(version)
        if form and (not known or version.split(".")[0] == known):
            continue
        example = f"a version of branch {known} such as {known}.261.03" if known else "a version such as 535.261.03"
        yield Problem("nvidia_driver_version", _written(ctx, host, "nvidia_driver_version"),
                      f"must be empty or {example}", host)


def _reboot_batch(ctx):
    """Refuse a reboot batch that is neither a node count nor a percentage."""
    for host in ctx.hosts:
        if not ctx.has(host, "nvidia_driver_reboot_batch"):
            continue
        batch = ctx.var(host, "nvidia_driver_reboot_batch")
        # str() as Jinja's | string: 4 and "4" are counts, True ('True') and 2.5 are not.
        if not _BATCH.fullmatch(str(batch)):
            yield Problem("nvidia_driver_reboot_batch", _written(ctx, host, "nvidia_driver_reboot_batch"),
                          "not a positive number of nodes (1, 2, ...) or a percentage from 1% to 100%", host)


def _debian_branch(ctx):
    """Refuse, with source debian, a branch other than the one Debian's non-free archive carries."""
    for host in ctx.hosts:
        branch = ctx.var(host, "nvidia_driver_branch")
        platform = _platform(ctx, host)
        if ctx.var(host, "nvidia_driver_source") != "debian" or not platform:
            continue
        carried = _release_vars(platform["name"]).get("nvidia_driver_debian_branch")
        # No such branch on Ubuntu (rule _source refuses debian there); a malformed branch is _branch_version's.
        if carried is None or not _is_branch(branch) or branch == str(carried):
            continue
        yield Problem("nvidia_driver_branch", _written(ctx, host, "nvidia_driver_branch"),
                      f"nvidia_driver_source debian installs the driver of Debian {platform['version']}'s non-free "
                      f"archive, branch {carried}; use nvidia_driver_source cuda for other branches", host)


def _fabricmanager(ctx):
    """Refuse the fabric manager with source debian (Debian's archive has none)."""
    for host in ctx.hosts:
        if ctx.var(host, "nvidia_driver_fabricmanager") is True and ctx.var(host, "nvidia_driver_source") == "debian":
            yield Problem("nvidia_driver_fabricmanager", _written(ctx, host, "nvidia_driver_fabricmanager"),
                          "Debian's archive (nvidia_driver_source debian) has no fabric manager: "
                          "set nvidia_driver_source to cuda on NVSwitch systems", host)


def _debian_mirror(ctx):
    """Refuse, with source debian, a Debian mirror apt cannot use."""
    for host in ctx.hosts:
        mirror = ctx.var(host, "nvidia_driver_debian_mirror")
        if ctx.var(host, "nvidia_driver_source") != "debian" or not ctx.has(host, "nvidia_driver_debian_mirror"):
            continue
        if not (isinstance(mirror, str) and _MIRROR.fullmatch(mirror)):
            # Credentials in the URL stay out of the report.
            shown = redact_urls(_written(ctx, host, "nvidia_driver_debian_mirror"))
            yield Problem("nvidia_driver_debian_mirror", shown,
                          "not a URL apt can use: an http://, https:// or file:// URL without spaces", host)


RULES = (_supported, _source, _branch_version, _reboot_batch, _debian_branch, _fabricmanager, _debian_mirror)
