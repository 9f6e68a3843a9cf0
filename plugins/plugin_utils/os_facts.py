# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that names a node's platform the way Lockstep's roles and
their vendors' repositories do (filter lockstep.gpu.os_release)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

#: The releases every role supports, as ``<Distribution>-<version>``.
SUPPORTED = ("Debian-12", "Ubuntu-22.04", "Ubuntu-24.04")

#: Ansible's architecture -> Debian's.
_DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64el", "s390x": "s390x"}
#: Ansible's architecture -> the directory of NVIDIA's CUDA repository.
_NVIDIA_ARCH = {"aarch64": "sbsa"}


def os_release(facts):
    """``ansible_facts`` -> the node's platform names.

    Returns ``{"name": "Debian-12", "distribution": "Debian", "version": "12",
    "codename": "bookworm", "family": "Debian", "supported": True,
    "deb_arch": "amd64", "nvidia_repo": "debian12", "nvidia_arch": "x86_64"}``.
    ``version`` is the major version on Debian and the full release on Ubuntu
    (22.04), as both distributions number their releases; ``nvidia_repo`` and
    ``nvidia_arch`` are the path components of NVIDIA's CUDA repository
    (``.../repos/debian12/x86_64``, ``ubuntu2204/sbsa``).
    """
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(f"os_release: expects ansible_facts, got {type(facts).__name__}")
    distribution = str(facts.get("distribution") or "")
    if not distribution:
        raise AnsibleFilterError("os_release: ansible_facts has no 'distribution' (gather facts first)")
    if distribution == "Debian":
        version = str(facts.get("distribution_major_version") or "")
        repo = f"debian{version}"
    else:
        version = str(facts.get("distribution_version") or "")
        repo = distribution.lower() + version.replace(".", "")
    arch = str(facts.get("architecture") or "")
    name = f"{distribution}-{version}"
    return {
        "name": name,
        "distribution": distribution,
        "version": version,
        "codename": facts.get("distribution_release"),
        "family": facts.get("os_family"),
        "supported": name in SUPPORTED,
        "deb_arch": _DEB_ARCH.get(arch, arch),
        "nvidia_repo": repo,
        "nvidia_arch": _NVIDIA_ARCH.get(arch, arch),
    }
