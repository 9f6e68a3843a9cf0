# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version ordering: NVIDIA dotted, Debian and RPM versions (controller side).

Functions (standard library only; plugins/filter/versions.py exposes
version_compare and pkg_upstream as lockstep.gpu.<name>)::

    version_compare(a, b, scheme="auto")  -> -1 | 0 | 1
    version_parse(v, scheme="auto")       -> dict
    version_ge / _gt / _le / _lt / _eq (a, b, scheme="auto") -> bool
    pkg_upstream(pkg_version)             -> "2.18.3"
    pkg_cuda_tag(pkg_version)             -> "12.1" | None

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
        that: "(driver_version | lockstep.gpu.version_compare('525.60.13')) >= 0"
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

SCHEMES = ("auto", "nvidia", "debian", "rpm")

DOTTED_RE = re.compile(r"^\d+(?:\.\d+)*$")
_EPOCH_RE = re.compile(r"^(\d+):")


def as_version_string(value, what="version"):
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
    if not DOTTED_RE.match(text):
        raise AnsibleFilterError(
            f"lockstep: {text!r} is not a dotted numeric (nvidia scheme) version such as 530.30.02"
        )
    return [int(p) for p in text.split(".")]


def nvidia_cmp(a, b):
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
    if all(DOTTED_RE.match(t) for t in texts):
        return "nvidia"
    return "debian"


def version_compare(a, b, scheme="auto"):
    """Compare versions ``a`` and ``b``; return -1, 0 or 1 (``a`` < = > ``b``)."""
    _check_scheme(scheme)
    ta = as_version_string(a)
    tb = as_version_string(b)
    resolved = _resolve_scheme(scheme, ta, tb)
    if resolved == "nvidia":
        return nvidia_cmp(ta, tb)
    if resolved == "rpm":
        return _rpm_cmp(ta, tb)
    return _debian_cmp(ta, tb)


def version_parse(v, scheme="auto"):
    """Split a version into its parts.

    nvidia -> ``{"scheme", "version", "parts", "major", "minor", "patch"}``
    (minor/patch None when absent); debian -> ``{"scheme", "version",
    "epoch", "upstream", "revision"}`` (epoch 0, revision "" when absent);
    rpm -> ``{"scheme", "version", "epoch", "version_part", "release"}``
    (epoch and release None when absent).
    """
    _check_scheme(scheme)
    text = as_version_string(v)
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


def version_ge(a, b, scheme="auto"):
    return version_compare(a, b, scheme) >= 0


def version_gt(a, b, scheme="auto"):
    return version_compare(a, b, scheme) > 0


def version_le(a, b, scheme="auto"):
    return version_compare(a, b, scheme) <= 0


def version_lt(a, b, scheme="auto"):
    return version_compare(a, b, scheme) < 0


def version_eq(a, b, scheme="auto"):
    return version_compare(a, b, scheme) == 0


def pkg_upstream(pkg_version):
    """Upstream part of a Debian/RPM package version.

    Drops the epoch (``1:``) and the revision/release (after the last ``-``):
    ``2.18.3-1+cuda12.1`` -> ``2.18.3``, ``3:530.30.02-1.el8`` -> ``530.30.02``,
    ``535.261.03-1~deb12u1`` -> ``535.261.03``. A plain version is returned as is.
    """
    text = as_version_string(pkg_version, "package version")
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


def pkg_cuda_tag(pkg_version):
    """CUDA version a package was built for, from its version string.

    ``2.18.3-1+cuda12.1`` -> ``12.1``, ``2.18.3-1.cuda12.1`` -> ``12.1``,
    ``2.1.0+cu121`` -> ``12.1``. None when the version carries no CUDA tag.
    """
    text = as_version_string(pkg_version, "package version")
    m = _CUDA_TAG_RE.search(text)
    if m:
        return m.group(1)
    m = _CU_TAG_RE.search(text)
    if m:
        return f"{int(m.group(1))}.{m.group(2)}"
    return None
