# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version filters: parse and compare versions, and check CUDA against the driver.

Filters (all run on the controller, standard library only)::

    lockstep_version_compare(a, b, scheme="auto")  -> -1 | 0 | 1
    lockstep_version_parse(v, scheme="auto")       -> dict
    lockstep_version_ge / _gt / _le / _lt / _eq (a, b, scheme="auto") -> bool
    lockstep_pkg_upstream(pkg_version)             -> "2.18.3"
    lockstep_pkg_cuda_tag(pkg_version)             -> "12.1" | None
    lockstep_cuda_min_driver(cuda, mode="toolkit") -> "530.30.02"
    lockstep_cuda_driver_compatible(driver, cuda, mode="toolkit") -> bool
    lockstep_cuda_driver_check(driver, cuda, mode="toolkit") -> dict

Schemes
-------
``nvidia``
    Dotted numbers only (``530.30.02``, ``12.1.105``). Parts compare as
    integers; a missing part counts as 0, so ``580`` == ``580.0`` < ``580.65.06``.
``debian``
    dpkg's algorithm (Debian Policy 5.6.12, dpkg ``lib/dpkg/version.c``):
    ``[epoch:]upstream[-revision]``; non-digit runs compare with letters
    before non-letters and ``~`` before everything (even the end of the
    string); digit runs compare numerically.
``rpm``
    rpm's ``rpmvercmp()`` with ``[epoch:]version[-release]``: alphanumeric
    segments, numeric newer than alpha, ``~`` sorts before and ``^`` after the
    base version; releases are compared only when both sides have one (as
    ``rpmverCmp()`` does).
``auto``
    ``nvidia`` when both versions are dotted numbers, otherwise ``debian``
    (which orders dotted numbers the same way and also reads epochs,
    revisions and tildes).

Example::

    - ansible.builtin.assert:
        that: "(driver_version | lockstep_version_compare('525.60.13')) >= 0"
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

SCHEMES = ("auto", "nvidia", "debian", "rpm")

_DOTTED_RE = re.compile(r"^\d+(?:\.\d+)*$")
_EPOCH_RE = re.compile(r"^(\d+):")


def _as_version_string(value, what="version"):
    """Return ``value`` as a stripped string, or raise naming the bad value."""
    if isinstance(value, bool) or value is None or isinstance(value, (Mapping, list, tuple, set)):
        raise AnsibleFilterError(f"lockstep: {what} must be a string, got {value!r}")
    text = str(value).strip()
    if not text:
        raise AnsibleFilterError(f"lockstep: {what} is empty ({value!r})")
    return text


def _check_scheme(scheme):
    if scheme not in SCHEMES:
        raise AnsibleFilterError(
            f"lockstep: unknown version scheme {scheme!r}; use one of {', '.join(SCHEMES)}"
        )


# --------------------------------------------------------------------------- #
# nvidia: dotted numeric
# --------------------------------------------------------------------------- #


def _nvidia_parts(text):
    if not _DOTTED_RE.match(text):
        raise AnsibleFilterError(
            f"lockstep: {text!r} is not a dotted numeric (nvidia scheme) version such as 530.30.02"
        )
    return [int(p) for p in text.split(".")]


def _nvidia_cmp(a, b):
    pa, pb = _nvidia_parts(a), _nvidia_parts(b)
    width = max(len(pa), len(pb))
    pa += [0] * (width - len(pa))
    pb += [0] * (width - len(pb))
    return (pa > pb) - (pa < pb)


# --------------------------------------------------------------------------- #
# debian: dpkg verrevcmp
# --------------------------------------------------------------------------- #


def _dpkg_order(ch):
    """Weight of one non-digit character, as dpkg's ``order()``."""
    if ch == "":
        return 0
    if ch.isdigit():  # not reached for digits in practice; kept as in dpkg
        return 0
    if "a" <= ch <= "z" or "A" <= ch <= "Z":
        return ord(ch)
    if ch == "~":
        return -1
    return ord(ch) + 256


def _isdigit(ch):
    return "0" <= ch <= "9"


def dpkg_verrevcmp(a, b):
    """Compare two upstream versions (or two revisions) as dpkg does.

    A port of ``verrevcmp()`` from dpkg's ``lib/dpkg/version.c``. Returns a
    negative, zero or positive integer (not normalised to -1/0/1).
    """
    a = a or ""
    b = b or ""
    i = j = 0
    la, lb = len(a), len(b)
    while i < la or j < lb:
        first_diff = 0
        while (i < la and not _isdigit(a[i])) or (j < lb and not _isdigit(b[j])):
            ac = _dpkg_order(a[i] if i < la else "")
            bc = _dpkg_order(b[j] if j < lb else "")
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < la and a[i] == "0":
            i += 1
        while j < lb and b[j] == "0":
            j += 1
        while i < la and j < lb and _isdigit(a[i]) and _isdigit(b[j]):
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < la and _isdigit(a[i]):
            return 1
        if j < lb and _isdigit(b[j]):
            return -1
        if first_diff:
            return first_diff
    return 0


def _debian_split(text):
    """Split ``[epoch:]upstream[-revision]`` like dpkg's ``parseversion()``."""
    epoch = 0
    rest = text
    if ":" in text:
        head, rest = text.split(":", 1)
        if not head.isdigit():
            raise AnsibleFilterError(
                f"lockstep: epoch {head!r} in Debian version {text!r} is not a number"
            )
        epoch = int(head)
    if "-" in rest:
        upstream, revision = rest.rsplit("-", 1)
    else:
        upstream, revision = rest, ""
    return epoch, upstream, revision


def _debian_cmp(a, b):
    ea, ua, ra = _debian_split(a)
    eb, ub, rb = _debian_split(b)
    if ea != eb:
        return 1 if ea > eb else -1
    rc = dpkg_verrevcmp(ua, ub)
    if not rc:
        rc = dpkg_verrevcmp(ra, rb)
    return (rc > 0) - (rc < 0)


# --------------------------------------------------------------------------- #
# rpm: rpmvercmp
# --------------------------------------------------------------------------- #


def _isalpha(ch):
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def _isalnum(ch):
    return _isalpha(ch) or _isdigit(ch)


def rpmvercmp(a, b):
    """Compare two version (or release) strings as rpm's ``rpmvercmp()``.

    A port of ``rpmvercmp()`` from rpm's ``rpmio/rpmvercmp.c``, including
    tilde (sorts before the base version) and caret (sorts after the base
    version but before the next one). Returns -1, 0 or 1.
    """
    if a == b:
        return 0
    i = j = 0
    la, lb = len(a), len(b)
    while i < la or j < lb:
        while i < la and not _isalnum(a[i]) and a[i] not in "~^":
            i += 1
        while j < lb and not _isalnum(b[j]) and b[j] not in "~^":
            j += 1
        ca = a[i] if i < la else ""
        cb = b[j] if j < lb else ""

        if ca == "~" or cb == "~":
            if ca != "~":
                return 1
            if cb != "~":
                return -1
            i += 1
            j += 1
            continue

        if ca == "^" or cb == "^":
            if not ca:
                return -1
            if not cb:
                return 1
            if ca != "^":
                return 1
            if cb != "^":
                return -1
            i += 1
            j += 1
            continue

        if not (ca and cb):
            break

        si, sj = i, j
        if _isdigit(ca):
            while i < la and _isdigit(a[i]):
                i += 1
            while j < lb and _isdigit(b[j]):
                j += 1
            isnum = True
        else:
            while i < la and _isalpha(a[i]):
                i += 1
            while j < lb and _isalpha(b[j]):
                j += 1
            isnum = False

        seg_a, seg_b = a[si:i], b[sj:j]
        if not seg_b:
            # Different segment types: numeric is newer than alpha.
            return 1 if isnum else -1
        if isnum:
            seg_a = seg_a.lstrip("0")
            seg_b = seg_b.lstrip("0")
            if len(seg_a) != len(seg_b):
                return 1 if len(seg_a) > len(seg_b) else -1
        if seg_a != seg_b:
            return 1 if seg_a > seg_b else -1

    if i >= la and j >= lb:
        return 0
    return 1 if i < la else -1


def _rpm_split(text):
    """Split ``[epoch:]version[-release]``; epoch is None when absent."""
    epoch = None
    rest = text
    m = _EPOCH_RE.match(text)
    if m:
        epoch = int(m.group(1))
        rest = text[m.end() :]
    elif ":" in text:
        raise AnsibleFilterError(f"lockstep: epoch in RPM version {text!r} is not a number")
    if "-" in rest:
        version, release = rest.rsplit("-", 1)
    else:
        version, release = rest, None
    return epoch, version, release


def _rpm_cmp(a, b):
    ea, va, ra = _rpm_split(a)
    eb, vb, rb = _rpm_split(b)
    rc = rpmvercmp(str(ea or 0), str(eb or 0))
    if not rc:
        rc = rpmvercmp(va, vb)
    if not rc and ra is not None and rb is not None:
        rc = rpmvercmp(ra, rb)
    return rc


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #


def _resolve_scheme(scheme, *texts):
    if scheme != "auto":
        return scheme
    if all(_DOTTED_RE.match(t) for t in texts):
        return "nvidia"
    return "debian"


def lockstep_version_compare(a, b, scheme="auto"):
    """Compare versions ``a`` and ``b``; return -1, 0 or 1 (``a`` < = > ``b``)."""
    _check_scheme(scheme)
    ta = _as_version_string(a)
    tb = _as_version_string(b)
    resolved = _resolve_scheme(scheme, ta, tb)
    if resolved == "nvidia":
        return _nvidia_cmp(ta, tb)
    if resolved == "rpm":
        return _rpm_cmp(ta, tb)
    return _debian_cmp(ta, tb)


def lockstep_version_parse(v, scheme="auto"):
    """Split a version into its parts.

    nvidia -> ``{"scheme", "version", "parts", "major", "minor", "patch"}``
    (minor/patch None when absent); debian -> ``{"scheme", "version",
    "epoch", "upstream", "revision"}`` (epoch 0, revision "" when absent);
    rpm -> ``{"scheme", "version", "epoch", "version_part", "release"}``
    (epoch and release None when absent).
    """
    _check_scheme(scheme)
    text = _as_version_string(v)
    resolved = _resolve_scheme(scheme, text)
    if resolved == "nvidia":
        parts = _nvidia_parts(text)
        return {
            "scheme": "nvidia",
            "version": text,
            "parts": parts,
            "major": parts[0],
            "minor": parts[1] if len(parts) > 1 else None,
            "patch": parts[2] if len(parts) > 2 else None,
        }
    if resolved == "rpm":
        epoch, version, release = _rpm_split(text)
        return {
            "scheme": "rpm",
            "version": text,
            "epoch": epoch,
            "version_part": version,
            "release": release,
        }
    epoch, upstream, revision = _debian_split(text)
    return {
        "scheme": "debian",
        "version": text,
        "epoch": epoch,
        "upstream": upstream,
        "revision": revision,
    }


def lockstep_version_ge(a, b, scheme="auto"):
    return lockstep_version_compare(a, b, scheme) >= 0


def lockstep_version_gt(a, b, scheme="auto"):
    return lockstep_version_compare(a, b, scheme) > 0


def lockstep_version_le(a, b, scheme="auto"):
    return lockstep_version_compare(a, b, scheme) <= 0


def lockstep_version_lt(a, b, scheme="auto"):
    return lockstep_version_compare(a, b, scheme) < 0


def lockstep_version_eq(a, b, scheme="auto"):
    return lockstep_version_compare(a, b, scheme) == 0


def lockstep_pkg_upstream(pkg_version):
    """Upstream part of a Debian/RPM package version.

    Drops the epoch (``1:``) and the revision/release (after the last ``-``):
    ``2.18.3-1+cuda12.1`` -> ``2.18.3``, ``3:530.30.02-1.el8`` -> ``530.30.02``,
    ``535.261.03-1~deb12u1`` -> ``535.261.03``. A plain version is returned as is.
    """
    text = _as_version_string(pkg_version, "package version")
    m = _EPOCH_RE.match(text)
    if m:
        text = text[m.end() :]
    if "-" in text:
        text = text.rsplit("-", 1)[0]
    if not text:
        raise AnsibleFilterError(
            f"lockstep: package version {pkg_version!r} has no upstream version"
        )
    return text


_CUDA_TAG_RE = re.compile(r"cuda(\d+(?:\.\d+)?)", re.IGNORECASE)
_CU_TAG_RE = re.compile(r"(?<![a-z])cu(\d{2})(\d)(?!\d)", re.IGNORECASE)


def lockstep_pkg_cuda_tag(pkg_version):
    """CUDA version a package was built for, from its version string.

    ``2.18.3-1+cuda12.1`` -> ``12.1``, ``2.18.3-1.cuda12.1`` -> ``12.1``,
    ``2.1.0+cu121`` -> ``12.1``. None when the version carries no CUDA tag.
    """
    text = _as_version_string(pkg_version, "package version")
    m = _CUDA_TAG_RE.search(text)
    if m:
        return m.group(1)
    m = _CU_TAG_RE.search(text)
    if m:
        return f"{int(m.group(1))}.{m.group(2)}"
    return None


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
    text = _as_version_string(cuda, "CUDA version")
    if not _DOTTED_RE.match(text):
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


def lockstep_cuda_min_driver(cuda_version, mode="toolkit"):
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
    if floor is None or _nvidia_cmp(toolkit, floor) < 0:
        return toolkit
    return floor


def _driver_text(driver_version):
    """A driver version as dotted numbers; a package version is reduced to its upstream."""
    text = _as_version_string(driver_version, "NVIDIA driver version")
    if not _DOTTED_RE.match(text):
        upstream = lockstep_pkg_upstream(text)
        if not _DOTTED_RE.match(upstream):
            raise AnsibleFilterError(
                f"lockstep: NVIDIA driver version {text!r} is not a version such as 535.261.03"
            )
        text = upstream
    return text


def lockstep_cuda_driver_check(driver_version, cuda_version, mode="toolkit"):
    """Check a driver against a CUDA version; return a dict with a readable message.

    ``{"compatible", "required", "driver", "cuda", "mode", "message"}``. The
    driver may be a package version (``535.261.03-1~deb12u1``).
    """
    required = lockstep_cuda_min_driver(cuda_version, mode)
    cuda_text = _as_version_string(cuda_version, "CUDA version")
    driver = _driver_text(driver_version)
    compatible = _nvidia_cmp(driver, required) >= 0
    how = "" if mode == "toolkit" else " (minor version compatibility)"
    if compatible:
        message = (
            f"NVIDIA driver {driver} satisfies CUDA {cuda_text}{how}, "
            f"which needs driver >= {required}"
        )
    else:
        message = (
            f"CUDA {cuda_text}{how} needs NVIDIA driver >= {required}; "
            f"the inventory asks for {driver}"
        )
    return {
        "compatible": compatible,
        "required": required,
        "driver": driver,
        "cuda": cuda_text,
        "mode": mode,
        "message": message,
    }


def lockstep_cuda_driver_compatible(driver_version, cuda_version, mode="toolkit"):
    """True when ``driver_version`` meets the minimum driver for ``cuda_version``."""
    return lockstep_cuda_driver_check(driver_version, cuda_version, mode)["compatible"]


class FilterModule:
    """Lockstep version filters."""

    def filters(self):
        return {
            "lockstep_version_compare": lockstep_version_compare,
            "lockstep_version_parse": lockstep_version_parse,
            "lockstep_version_ge": lockstep_version_ge,
            "lockstep_version_gt": lockstep_version_gt,
            "lockstep_version_le": lockstep_version_le,
            "lockstep_version_lt": lockstep_version_lt,
            "lockstep_version_eq": lockstep_version_eq,
            "lockstep_pkg_upstream": lockstep_pkg_upstream,
            "lockstep_pkg_cuda_tag": lockstep_pkg_cuda_tag,
            "lockstep_cuda_min_driver": lockstep_cuda_min_driver,
            "lockstep_cuda_driver_compatible": lockstep_cuda_driver_compatible,
            "lockstep_cuda_driver_check": lockstep_cuda_driver_check,
        }
