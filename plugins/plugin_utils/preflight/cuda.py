# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role cuda (what roles/cuda/tasks/preflight.yml checked in Jinja),
and the CUDA/driver contract across the GPU nodes (roles/preflight/tasks/cuda_driver.yml)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.plugin_utils.cuda import cuda_driver_check, cuda_min_driver
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import unsupported_release
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem
from ansible_collections.lockstep.gpu.plugins.plugin_utils.versions import pkg_upstream

# The CUDA/driver contract reads role nvidia_driver's driver. The role's derived
# values (cuda_platform, cuda_os_release) are os_release() here.
VARIABLES: tuple[str, ...] = ("nvidia_driver_branch", "nvidia_driver_version")

_RELEASE = re.compile(r"[0-9]+\.[0-9]+")
# What the filters of the contract raise on a value they cannot read.
_UNREADABLE = (AnsibleFilterError, TypeError, ValueError)


def _written(ctx, host, name):
    """The value as the inventory wrote it (before the spec's conversion) when known."""
    return getattr(ctx, "raw", {}).get(host, {}).get(name, ctx.var(host, name))


def _versions(ctx, host) -> list | None:
    """host's cuda_versions when it is a non-empty list of major.minor releases, else None."""
    versions = ctx.var(host, "cuda_versions")
    if not isinstance(versions, list) or not versions:
        return None
    if all(isinstance(v, str) and _RELEASE.fullmatch(v) for v in versions):
        return versions
    return None


def _packages(ctx, host) -> dict:
    """host's cuda_package_versions, {} when unset or not a mapping."""
    packages = ctx.var(host, "cuda_package_versions", {})
    return dict(packages) if isinstance(packages, Mapping) else {}


def _package_fits(release: str, version, versions: list) -> bool:
    """Is version the apt version of a CUDA <release> update (12.1 -> 12.1.1-1), release in versions?"""
    pattern = re.escape(release) + r"\.[0-9]+-[0-9]+"
    return release in versions and isinstance(version, str) and bool(re.fullmatch(pattern, version))


def _supported(ctx):
    """Refuse an unsupported distribution (NVIDIA's repository has the toolkits for SUPPORTED only)."""
    return unsupported_release(ctx, "cuda")


def _numbers(value, keys: bool = False) -> list:
    """The YAML numbers in a value as written (the keys of a mapping, the items of a list, or itself)."""
    if keys:
        items = list(value) if isinstance(value, Mapping) else []
    else:
        items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _yaml_numbers(ctx):
    """Refuse CUDA versions written as YAML numbers: the spec turns 12.10 into '12.1', so read the raw value."""
    for host in ctx.hosts:
        raw = getattr(ctx, "raw", {}).get(host, {})
        for name, keys in (("cuda_versions", False), ("cuda_default_version", False), ("cuda_package_versions", True)):
            found = _numbers(raw.get(name), keys)
            if not found:
                continue
            first = str(found[0])
            # Only a float lost a trailing zero (12.10 -> 12.1); an int lost nothing but its quotes.
            hint = f"'{first}'"
            if isinstance(found[0], float):
                hint += f", or '{first}0' if you meant that release"
            listing = ("the key " if keys else "") + ", ".join(map(str, found))
            yield Problem(name, raw[name], f"{listing} written as a YAML number: quote it ({hint}), "
                          "since YAML reads 12.10 as 12.1", host)


def _releases(ctx):
    """Refuse cuda_versions that are not major.minor releases, and a cuda_default_version not among them."""
    for host in ctx.hosts:
        if not ctx.has(host, "cuda_versions"):
            continue
        versions = _versions(ctx, host)
        if versions is None:
            yield Problem("cuda_versions", _written(ctx, host, "cuda_versions"),
                          'must list CUDA releases (major.minor) such as "12.1", at least one', host)
            continue  # the default is judged against a usable list only
        if ctx.has(host, "cuda_default_version") and ctx.var(host, "cuda_default_version") not in versions:
            yield Problem("cuda_default_version", _written(ctx, host, "cuda_default_version"),
                          f"must be one of cuda_versions {versions!r}", host)


def _package_versions(ctx):
    """Refuse package versions of toolkits that are not installed, or of another release."""
    for host in ctx.hosts:
        versions = _versions(ctx, host)
        if versions is None:  # _releases names it; Jinja stopped there
            continue
        for key, version in _packages(ctx, host).items():
            release = str(key)  # a YAML-number key is _yaml_numbers' problem
            if _package_fits(release, version, versions):
                continue
            if release in versions:
                allowed = f"must be the apt version of a CUDA {release} release (e.g. {release}.1-1)"
            else:
                allowed = f"{release} is not in cuda_versions {versions!r}: pin only toolkits that are installed"
            yield Problem(f"cuda_package_versions['{release}']", version, allowed, host)


def _contract_releases(ctx, host) -> list | None:
    """The CUDA releases the contract checks on host (pinned package's upstream, else X.Y), None when the
    cuda rules above refuse host's values (Jinja never reached the contract on such a node)."""
    versions = _versions(ctx, host)
    packages = _packages(ctx, host)
    if versions is None or not ctx.has(host, "cuda_driver_compat_mode"):
        return None
    if any(not _package_fits(str(k), v, versions) for k, v in packages.items()):
        return None
    pins = {str(k): v for k, v in packages.items()}
    try:
        return [pkg_upstream(pins.get(v, v)) for v in dict.fromkeys(versions)]
    except _UNREADABLE:
        return None


def _unknown_cuda(ctx, host, releases):
    """A release the table of minimum drivers does not know: a problem of cuda_versions."""
    mode = ctx.var(host, "cuda_driver_compat_mode")
    for version, release in zip(dict.fromkeys(ctx.var(host, "cuda_versions")), releases):
        try:
            cuda_min_driver(release, mode)
        except _UNREADABLE as error:
            yield Problem("cuda_versions", version, str(error).removeprefix("lockstep: "), host)


def _cuda_driver(ctx):
    """Refuse a driver that cannot run every CUDA of cuda_versions, on every GPU node (the contract)."""
    # playbooks/preflight.yml checks the contract when both roles are checked (roles unknown: always).
    if ctx.roles and "nvidia_driver" not in ctx.roles:
        return
    for host in ctx.hosts:
        releases = _contract_releases(ctx, host)
        if releases is None or not ctx.has(host, "nvidia_driver_branch") or not ctx.has(host, "nvidia_driver_version"):
            continue
        unknown = list(_unknown_cuda(ctx, host, releases))
        if unknown:
            yield from unknown
            continue
        # As the role installs it: the exact version, else the newest of the branch.
        variable = "nvidia_driver_version" if ctx.var(host, "nvidia_driver_version") else "nvidia_driver_branch"
        try:
            check = cuda_driver_check(ctx.var(host, variable), releases, ctx.var(host, "cuda_driver_compat_mode"))
        except _UNREADABLE:  # not a driver release: role nvidia_driver's rules name it
            continue
        if not check["compatible"]:
            yield Problem(variable, _written(ctx, host, variable),
                          f"{check['message']}: raise nvidia_driver_version (or nvidia_driver_branch), "
                          "or lower cuda_versions", host)


RULES = (_supported, _yaml_numbers, _releases, _package_versions, _cuda_driver)
