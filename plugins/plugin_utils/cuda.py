# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CUDA/driver contract: the minimum Linux driver of every CUDA release
(NVIDIA's release notes), and one check of a driver (exact version or branch)
against the cluster's CUDA versions. The filters lockstep.gpu.cuda_min_driver
and lockstep.gpu.cuda_driver_check expose it; playbooks/preflight.yml runs
the check once for the whole cluster before anything changes."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.versions import (
    DOTTED_RE,
    as_version_string,
    nvidia_cmp,
    pkg_upstream,
)

# --------------------------------------------------------------------------- #
# CUDA toolkit -> minimum Linux x86_64 driver
# --------------------------------------------------------------------------- #
#
# Source: NVIDIA CUDA Toolkit Release Notes, Table 3 "CUDA Toolkit and
# Corresponding Driver Versions", column "Toolkit Driver Version / Linux x86_64
# Driver Version":
#   https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
# Every row below was read from stored copies of that page (the 13.2 Update 2
# and 13.4 Update 1 editions; the latter lists 12.9 and earlier under "Older
# CUDA versions"); 13.0 GA (580.65.06) is also stated by a second, independent
# manifest. The table has no row for 12.3 Update 2 (12.3.2), so it is not
# listed; see _cuda_release() for how such versions resolve. Releases after
# 13.2 Update 2 are listed by the page only by driver branch (R595, R610,
# R615), with no minimum version, so they are left out.
#
# (toolkit version, NVIDIA's row label, minimum Linux x86_64 driver)
_CUDA_RELEASES = (
    ("13.2.2", "CUDA 13.2 Update 2", "595.71.05"),
    ("13.2.1", "CUDA 13.2 Update 1", "595.58.03"),
    ("13.2.0", "CUDA 13.2 GA", "595.45.04"),
    ("13.1.1", "CUDA 13.1 Update 1", "590.48.01"),
    ("13.1.0", "CUDA 13.1 GA", "590.44.01"),
    ("13.0.2", "CUDA 13.0 Update 2", "580.95.05"),
    ("13.0.1", "CUDA 13.0 Update 1", "580.82.07"),
    ("13.0.0", "CUDA 13.0 GA", "580.65.06"),
    ("12.9.1", "CUDA 12.9 Update 1", "575.57.08"),
    ("12.9.0", "CUDA 12.9 GA", "575.51.03"),
    ("12.8.1", "CUDA 12.8 Update 1", "570.124.06"),
    ("12.8.0", "CUDA 12.8 GA", "570.26"),
    ("12.6.3", "CUDA 12.6 Update 3", "560.35.05"),
    ("12.6.2", "CUDA 12.6 Update 2", "560.35.03"),
    ("12.6.1", "CUDA 12.6 Update 1", "560.35.03"),
    ("12.6.0", "CUDA 12.6 GA", "560.28.03"),
    ("12.5.1", "CUDA 12.5 Update 1", "555.42.06"),
    ("12.5.0", "CUDA 12.5 GA", "555.42.02"),
    ("12.4.1", "CUDA 12.4 Update 1", "550.54.15"),
    ("12.4.0", "CUDA 12.4 GA", "550.54.14"),
    ("12.3.1", "CUDA 12.3 Update 1", "545.23.08"),
    ("12.3.0", "CUDA 12.3 GA", "545.23.06"),
    ("12.2.2", "CUDA 12.2 Update 2", "535.104.05"),
    ("12.2.1", "CUDA 12.2 Update 1", "535.86.09"),
    ("12.2.0", "CUDA 12.2 GA", "535.54.03"),
    ("12.1.1", "CUDA 12.1 Update 1", "530.30.02"),
    ("12.1.0", "CUDA 12.1 GA", "530.30.02"),
    ("12.0.1", "CUDA 12.0 Update 1", "525.85.12"),
    ("12.0.0", "CUDA 12.0 GA", "525.60.13"),
    ("11.8.0", "CUDA 11.8 GA", "520.61.05"),
    ("11.7.1", "CUDA 11.7 Update 1", "515.48.07"),
    ("11.7.0", "CUDA 11.7 GA", "515.43.04"),
    ("11.6.2", "CUDA 11.6 Update 2", "510.47.03"),
    ("11.6.1", "CUDA 11.6 Update 1", "510.47.03"),
    ("11.6.0", "CUDA 11.6 GA", "510.39.01"),
    ("11.5.2", "CUDA 11.5 Update 2", "495.29.05"),
    ("11.5.1", "CUDA 11.5 Update 1", "495.29.05"),
    ("11.5.0", "CUDA 11.5 GA", "495.29.05"),
    ("11.4.4", "CUDA 11.4 Update 4", "470.82.01"),
    ("11.4.3", "CUDA 11.4 Update 3", "470.82.01"),
    ("11.4.2", "CUDA 11.4 Update 2", "470.57.02"),
    ("11.4.1", "CUDA 11.4 Update 1", "470.57.02"),
    ("11.4.0", "CUDA 11.4.0 GA", "470.42.01"),
    ("11.3.1", "CUDA 11.3.1 Update 1", "465.19.01"),
    ("11.3.0", "CUDA 11.3.0 GA", "465.19.01"),
    ("11.2.2", "CUDA 11.2.2 Update 2", "460.32.03"),
    ("11.2.1", "CUDA 11.2.1 Update 1", "460.32.03"),
    ("11.2.0", "CUDA 11.2.0 GA", "460.27.03"),
    ("11.1.1", "CUDA 11.1.1 Update 1", "455.32"),
    ("11.1.0", "CUDA 11.1 GA", "455.23"),
    ("11.0.3", "CUDA 11.0.3 Update 1", "450.51.06"),
    ("11.0.2", "CUDA 11.0.2 GA", "450.51.05"),
    ("11.0.1", "CUDA 11.0.1 RC", "450.36.06"),
)

#: toolkit version ("12.1.1") -> minimum Linux x86_64 driver ("530.30.02").
#: Source: https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
#: (Table 3, "CUDA Toolkit and Corresponding Driver Versions").
LOCKSTEP_CUDA_MIN_DRIVER = {version: driver for version, _label, driver in _CUDA_RELEASES}

#: toolkit version -> NVIDIA's row label ("CUDA 12.1 Update 1").
LOCKSTEP_CUDA_RELEASE_LABELS = {version: label for version, label, _driver in _CUDA_RELEASES}

#: "major.minor" -> the toolkit version of that minor's GA row. 11.0 GA is
#: 11.0.2 (11.0.1 was a release candidate); every other GA is x.y.0.
LOCKSTEP_CUDA_GA = {
    ".".join(version.split(".")[:2]): version
    for version, label, _driver in _CUDA_RELEASES
    if label.endswith(" GA")
}

#: CUDA major -> minimum driver for CUDA minor version compatibility
#: (same release notes, "Driver Range for Minor Version Compatibility" and its
#: footnote: 12.x >= 525.60.13, 11.x >= 450.80.02 on Linux). For 13.x the
#: page gives only the branch, ">= 580", kept as "580" (compares as 580.0.0).
LOCKSTEP_CUDA_MINOR_COMPAT_MIN_DRIVER = {
    "11": "450.80.02",
    "12": "525.60.13",
    "13": "580",
}

CUDA_MODES = ("toolkit", "minor_compat")


def _cuda_known_minors():
    return sorted(LOCKSTEP_CUDA_GA, key=lambda v: [int(p) for p in v.split(".")])


def _unknown_cuda(cuda, text):
    raise AnsibleFilterError(
        f"lockstep: unknown CUDA version {text!r}; known CUDA versions: "
        f"{', '.join(_cuda_known_minors())} (with their updates, e.g. 12.1.1)"
    )


def _cuda_release(cuda):
    """Map a CUDA version to a row of the table; return ``(text, release)``.

    ``12.1`` -> the 12.1 GA row; ``12.1.1`` -> 12.1 Update 1. A third part that
    is not a listed update -- a component/runtime build number such as
    ``12.1.105``, or an update missing from NVIDIA's table such as 12.3.2 --
    resolves to the newest listed release of that minor version, the strictest
    requirement. Unknown major.minor -> AnsibleFilterError.
    """
    text = as_version_string(cuda, "CUDA version")
    if not DOTTED_RE.match(text):
        raise AnsibleFilterError(
            f"lockstep: CUDA version {text!r} is not a dotted version such as 12.1 or 12.1.1"
        )
    parts = [int(p) for p in text.split(".")]
    if len(parts) < 2:
        # "12" alone names no toolkit release.
        _unknown_cuda(cuda, text)
    minor = f"{parts[0]}.{parts[1]}"
    if minor not in LOCKSTEP_CUDA_GA:
        _unknown_cuda(cuda, text)
    if len(parts) == 2:
        return text, LOCKSTEP_CUDA_GA[minor]
    exact = f"{minor}.{parts[2]}"
    if exact in LOCKSTEP_CUDA_MIN_DRIVER:
        return text, exact
    same_minor = [v for v in LOCKSTEP_CUDA_MIN_DRIVER if v.startswith(minor + ".")]
    newest = max(same_minor, key=lambda v: [int(p) for p in v.split(".")])
    return text, newest


def cuda_min_driver(cuda_version, mode="toolkit"):
    """Minimum Linux x86_64 NVIDIA driver for a CUDA toolkit version.

    ``mode="toolkit"``: the release notes' "Toolkit Driver Version".
    ``mode="minor_compat"``: the floor for CUDA minor version compatibility of
    that major (12.x -> 525.60.13), never above the toolkit's own requirement.
    """
    if mode not in CUDA_MODES:
        raise AnsibleFilterError(
            f"lockstep: unknown CUDA compatibility mode {mode!r}; use one of {', '.join(CUDA_MODES)}"
        )
    _text, release = _cuda_release(cuda_version)
    toolkit = LOCKSTEP_CUDA_MIN_DRIVER[release]
    if mode == "toolkit":
        return toolkit
    floor = LOCKSTEP_CUDA_MINOR_COMPAT_MIN_DRIVER.get(release.split(".")[0])
    if floor is None or nvidia_cmp(toolkit, floor) < 0:
        return toolkit
    return floor


def _driver_text(driver_version):
    """A driver version as dotted numbers; a package version is reduced to its upstream."""
    text = as_version_string(driver_version, "NVIDIA driver version")
    if not DOTTED_RE.match(text):
        upstream = pkg_upstream(text)
        if not DOTTED_RE.match(upstream):
            raise AnsibleFilterError(
                f"lockstep: NVIDIA driver version {text!r} is not a version such as 535.261.03"
            )
        text = upstream
    return text


_BRANCH_RE = re.compile(r"^\d{3}$")


def _check_one(driver, cuda_version, mode):
    required = cuda_min_driver(cuda_version, mode)
    cuda_text = as_version_string(cuda_version, "CUDA version")
    how = "" if mode == "toolkit" else " (minor version compatibility)"
    if _BRANCH_RE.match(driver):
        # A branch installs its newest release: enough when the branch is at
        # least the required version's branch.
        compatible = int(driver) >= int(required.split(".")[0])
        asked = f"branch {driver}"
    else:
        compatible = nvidia_cmp(driver, required) >= 0
        asked = driver
    if compatible:
        message = f"NVIDIA driver {asked} satisfies CUDA {cuda_text}{how}, which needs driver >= {required}"
    else:
        message = f"CUDA {cuda_text}{how} needs NVIDIA driver >= {required}; the inventory asks for {asked}"
    return {
        "compatible": compatible,
        "required": required,
        "driver": driver,
        "cuda": cuda_text,
        "mode": mode,
        "message": message,
    }


def cuda_driver_check(driver, cuda_versions, mode="toolkit"):
    """The CUDA/driver contract: can ``driver`` run every CUDA in ``cuda_versions``?

    ``driver`` is an exact version (``535.261.03``, or a package version such
    as ``535.261.03-1~deb12u1``) or a branch (``535``: its newest release).
    ``cuda_versions`` is one CUDA version or a list of them. Returns
    ``{"compatible", "required", "driver", "cuda", "mode", "message",
    "checks"}``: ``required`` is the highest minimum driver of the list,
    ``checks`` one result per CUDA version, ``message`` every incompatible
    version's reason (or the satisfied requirement). An empty list is an error.
    """
    if mode not in CUDA_MODES:
        raise AnsibleFilterError(
            f"lockstep: unknown CUDA compatibility mode {mode!r}; use one of {', '.join(CUDA_MODES)}"
        )
    text = as_version_string(driver, "NVIDIA driver version or branch")
    driver_text = text if _BRANCH_RE.match(text) else _driver_text(text)
    single = not isinstance(cuda_versions, (list, tuple))
    versions = [cuda_versions] if single else list(cuda_versions)
    if not versions:
        raise AnsibleFilterError("lockstep: cuda_driver_check needs at least one CUDA version")
    checks = [_check_one(driver_text, v, mode) for v in versions]
    if single:
        result = dict(checks[0])
    else:
        bad = [c["message"] for c in checks if not c["compatible"]]
        required = max((c["required"] for c in checks), key=lambda v: [int(p) for p in v.split(".")])
        result = {
            "compatible": not bad,
            "required": required,
            "driver": driver_text,
            "cuda": [c["cuda"] for c in checks],
            "mode": mode,
            "message": "; ".join(bad) if bad else "; ".join(c["message"] for c in checks),
        }
    result["checks"] = checks
    return result


def cuda_driver_compatible(driver_version, cuda_version, mode="toolkit"):
    """True when ``driver_version`` meets the minimum driver for ``cuda_version``."""
    return cuda_driver_check(driver_version, cuda_version, mode)["compatible"]
