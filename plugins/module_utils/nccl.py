# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for NCCL's header, NCCL debug logs and nccl-tests output.

Everything here runs on managed nodes, so it uses the standard library only.

* ``parse_nccl_header``: the version macros of an installed ``nccl.h``.
* ``parse_nccl_log_version``: the ``NCCL version X.Y.Z+cudaA.B`` line that
  NCCL prints (``NCCL_DEBUG=VERSION`` or ``INFO``).
* ``parse_all_reduce_perf``: the table, device list and summary printed by
  nccl-tests' ``all_reduce_perf`` (the other ``*_perf`` binaries share the
  format and parse the same way).
"""

from __future__ import annotations

import re

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError, require_text

# --------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------


def version_code(major, minor, patch):
    """NCCL_VERSION(X,Y,Z) from nccl.h: the encoding changed after 2.8."""
    if major <= 2 and minor <= 8:
        return major * 1000 + minor * 100 + patch
    return major * 10000 + minor * 100 + patch


# --------------------------------------------------------------------------
# nccl.h
# --------------------------------------------------------------------------

_HEADER_MACROS = (
    "NCCL_MAJOR",
    "NCCL_MINOR",
    "NCCL_PATCH",
    "NCCL_SUFFIX",
    "NCCL_VERSION_CODE",
)
_DEFINE_RE = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+(%s)\b[ \t]*(.*?)[ \t]*(?://.*|/\*.*)?$" % "|".join(_HEADER_MACROS),
    re.MULTILINE,
)


def _header_int(name, found, source):
    value = found[name]
    if not re.match(r"^\d+$", value):
        hint = ""
        if "${" in value or "@" in value:
            hint = " (this looks like the unconfigured template nccl.h.in)"
        raise ParseError("nccl.h: %s is %r, not a number%s" % (name, value, hint), source)
    return int(value)


def parse_nccl_header(text, source=None):
    """Read the version macros of an installed ``nccl.h``.

    Returns ``{"version", "major", "minor", "patch", "suffix",
    "version_code"}``. ``version`` is ``MAJOR.MINOR.PATCH`` followed by
    ``NCCL_SUFFIX``, the same string NCCL prints in its logs.
    ``version_code`` is ``NCCL_VERSION_CODE`` as defined in the header, or
    computed with the header's ``NCCL_VERSION()`` rule when it is absent.
    """
    text = require_text(text, source, "the text of nccl.h")
    found = {}
    for match in _DEFINE_RE.finditer(text):
        found.setdefault(match.group(1), match.group(2).strip())
    missing = [m for m in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH") if m not in found]
    if missing:
        raise ParseError(
            "nccl.h: no #define for %s; is this NCCL's nccl.h?" % ", ".join(missing),
            source,
        )
    major = _header_int("NCCL_MAJOR", found, source)
    minor = _header_int("NCCL_MINOR", found, source)
    patch = _header_int("NCCL_PATCH", found, source)

    suffix = ""
    if "NCCL_SUFFIX" in found:
        raw = found["NCCL_SUFFIX"]
        string = re.match(r'^"([^"]*)"$', raw)
        if string is None:
            raise ParseError("nccl.h: NCCL_SUFFIX is %r, not a string literal" % raw, source)
        suffix = string.group(1)

    if "NCCL_VERSION_CODE" in found:
        code = _header_int("NCCL_VERSION_CODE", found, source)
    else:
        code = version_code(major, minor, patch)

    return {
        "version": "%d.%d.%d%s" % (major, minor, patch, suffix),
        "major": major,
        "minor": minor,
        "patch": patch,
        "suffix": suffix,
        "version_code": code,
    }


# --------------------------------------------------------------------------
# NCCL debug log
# --------------------------------------------------------------------------

# init.cc: "NCCL version " MAJOR "." MINOR "." PATCH SUFFIX "+cuda" CUDA_MAJOR "." CUDA_MINOR
_LOG_VERSION_RE = re.compile(
    r"\bNCCL version (\d+\.\d+\.\d+)([^\s+]*)(?:\+cuda(\d+(?:\.\d+)*))?(?=\s|$)"
)


def _log_versions(text):
    """Distinct (version, cuda) pairs, in order of first appearance."""
    seen = []
    for match in _LOG_VERSION_RE.finditer(text):
        pair = (match.group(1) + match.group(2), match.group(3))
        if pair not in seen:
            seen.append(pair)
    return seen


def _single_log_version(text, source):
    pairs = _log_versions(text)
    if len(pairs) > 1:
        raise ParseError(
            "the log reports more than one NCCL version: %s"
            % ", ".join(v + ("+cuda" + c if c else "") for v, c in pairs),
            source,
        )
    return pairs[0] if pairs else None


def parse_nccl_log_version(text, source=None):
    """Find the NCCL version in an NCCL debug log.

    Matches both ``host:pid:tid [0] NCCL INFO NCCL version 2.22.3+cuda12.2``
    and the bare ``NCCL version 2.8.3+cuda11.2`` line older releases print,
    with or without an ``mpirun --tag-output`` prefix. Returns
    ``{"version": "2.22.3", "cuda": "12.2"}`` (``cuda`` is ``None`` when the
    line has no ``+cuda`` part). Several ranks printing the same version is
    fine; different versions in one log raise ``ParseError``.
    """
    text = require_text(text, source, "an NCCL debug log")
    pair = _single_log_version(text, source)
    if pair is None:
        raise ParseError(
            "no 'NCCL version X.Y.Z' line in the log; run with NCCL_DEBUG=VERSION "
            "or NCCL_DEBUG=INFO",
            source,
        )
    return {"version": pair[0], "cuda": pair[1]}


# --------------------------------------------------------------------------
# nccl-tests output
# --------------------------------------------------------------------------

# Prefixes launchers put in front of each line: Open MPI --tag-output
# ("[1,0]<stdout>:"), srun --label ("0: "), MPICH -prepend-rank ("[0] ").
_LAUNCHER_PREFIX_RE = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+: |\[\d+\] )")

_NTHREAD_RE = re.compile(
    r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)"
)
# "#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3"
# "#   Rank  0 Pid     26 on nccl-tests-efa-worker-0 device  0 [0x10] A100-SXM4-40GB"
_DEVICE_RE = re.compile(
    r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+"
    r"device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_HEADER_RE = re.compile(r"^#?\s*size\s+count\s+type\s+(.*)$")
_OOB_RE = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)")
_AVG_RE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([-+0-9.eE]+|nan|inf)\b")

_SIDE_KEYS = ("time_us", "algbw", "busbw")
_KNOWN_MIDDLE = ("redop", "root")


def _strip_prefix(line):
    return _LAUNCHER_PREFIX_RE.sub("", line, count=1)


def _parse_header(rest, line, source):
    """Columns between ``type`` and the first ``time``, and the check column."""
    words = rest.split()
    if "time" not in words:
        raise ParseError("results table header has no 'time' column: %r" % line, source)
    first_time = words.index("time")
    middle = words[:first_time]
    unknown = [w for w in middle if w not in _KNOWN_MIDDLE]
    if unknown:
        raise ParseError(
            "results table header has unknown column(s) %s: %r" % (unknown, line), source
        )
    side = words[first_time : first_time + 4]
    if len(side) != 4 or side[:3] != ["time", "algbw", "busbw"]:
        raise ParseError("unexpected results table header: %r" % line, source)
    check = side[3]
    if check not in ("#wrong", "error"):
        raise ParseError(
            "results table header: expected '#wrong' or 'error' after busbw, got %r" % check,
            source,
        )
    return middle, check


def _number(token, kind, line, source):
    try:
        return kind(token)
    except ValueError:
        raise ParseError("bad value %r in results row: %r" % (token, line), source)


def _side(tokens, check, line, source):
    values = {}
    for key, token in zip(_SIDE_KEYS, tokens[:3]):
        values[key] = _number(token, float, line, source)
    last = tokens[3].rstrip("*")
    values["wrong"] = None
    values["error"] = None
    if last != "N/A":
        if check == "#wrong":
            values["wrong"] = _number(last, int, line, source)
        else:
            values["error"] = _number(last, float, line, source)
    return values


def _parse_row(tokens, middle, check, line, source):
    row = {
        "size": _number(tokens[0], int, line, source),
        "count": _number(tokens[1], int, line, source),
        "type": tokens[2],
        "redop": None,
        "root": None,
    }
    for name, token in zip(middle, tokens[3 : 3 + len(middle)]):
        row[name] = _number(token, int, line, source) if name == "root" else token
    start = 3 + len(middle)
    row["out_of_place"] = _side(tokens[start : start + 4], check, line, source)
    row["in_place"] = _side(tokens[start + 4 : start + 8], check, line, source)
    return row


def parse_all_reduce_perf(text, source=None):
    """Parse the output of nccl-tests' ``all_reduce_perf``.

    Handles the current table (``redop root ... #wrong``), the older one
    (``redop ... error``, no ``root``), tables without ``redop``/``root``,
    ``N/A`` in the check column, launcher prefixes (``[1,0]<stdout>:``,
    ``0: ``, ``[0] ``) and NCCL INFO lines interleaved with the table.

    Returns::

        {"rows": [{"size", "count", "type", "redop", "root",
                   "out_of_place": {"time_us", "algbw", "busbw", "wrong", "error"},
                   "in_place": {...}}],
         "avg_busbw": float, "out_of_bounds": int | None,
         "nranks": int | None, "devices": [{"rank", "group", "pid", "host",
         "device", "bus_id", "gpu"}], "hosts": [...], "nthreads": int | None,
         "ngpus": int | None, "check_column": "#wrong" | "error",
         "nccl_version": str | None}

    ``wrong`` is the ``#wrong`` count (``None`` for ``N/A`` or the old
    format); ``error`` is the old format's max error (``None`` otherwise).
    A truncated output (no ``# Avg bus bandwidth`` line, or a row cut short)
    raises ``ParseError`` saying what is missing.
    """
    text = require_text(text, source, "all_reduce_perf output")
    devices = []
    rows = []
    middle = check = None
    header_line = None
    out_of_bounds = None
    avg_busbw = None
    nthreads = ngpus = None

    for raw in text.splitlines():
        line = _strip_prefix(raw.rstrip("\r"))
        stripped = line.strip()
        if not stripped:
            continue

        match = _AVG_RE.match(stripped)
        if match:
            if header_line is None:
                raise ParseError(
                    "'Avg bus bandwidth' line before any results table: %r" % stripped,
                    source,
                )
            avg_busbw = float(match.group(1))
            continue
        match = _OOB_RE.match(stripped)
        if match:
            out_of_bounds = int(match.group(1))
            continue
        match = _NTHREAD_RE.match(stripped)
        if match:
            nthreads, ngpus = int(match.group(1)), int(match.group(2))
            continue
        match = _DEVICE_RE.match(stripped)
        if match:
            devices.append(
                {
                    "rank": int(match.group(1)),
                    "group": int(match.group(2)) if match.group(2) is not None else None,
                    "pid": int(match.group(3)),
                    "host": match.group(4),
                    "device": int(match.group(5)),
                    "bus_id": match.group(6),
                    "gpu": match.group(7),
                }
            )
            continue
        match = _HEADER_RE.match(stripped)
        if match:
            if rows or avg_busbw is not None:
                raise ParseError(
                    "a second results table starts after the first; pass the output "
                    "of one nccl-tests run",
                    source,
                )
            middle, check = _parse_header(match.group(1), stripped, source)
            header_line = stripped
            continue
        if stripped.startswith("#") or header_line is None:
            continue

        tokens = stripped.split()
        if not re.match(r"^\d+$", tokens[0]):
            continue  # NCCL INFO/WARN and launcher lines between rows
        expected = 3 + len(middle) + 8
        if len(tokens) != expected:
            raise ParseError(
                "results row has %d fields, expected %d (table cut mid-row or "
                "corrupted by interleaved output): %r" % (len(tokens), expected, stripped),
                source,
            )
        if avg_busbw is not None:
            raise ParseError(
                "results row after the 'Avg bus bandwidth' line: %r" % stripped, source
            )
        rows.append(_parse_row(tokens, middle, check, stripped, source))

    if header_line is None:
        raise ParseError(
            "no nccl-tests results table (expected a '#  size  count  type ...' "
            "header); is this all_reduce_perf output?",
            source,
        )
    if not rows:
        raise ParseError("the results table has no rows; the output is truncated", source)
    if avg_busbw is None:
        raise ParseError(
            "no '# Avg bus bandwidth' line after the table (last row: size %d): the "
            "output is truncated or the test did not finish" % rows[-1]["size"],
            source,
        )

    hosts = []
    for device in devices:
        if device["host"] not in hosts:
            hosts.append(device["host"])
    nranks = max(d["rank"] for d in devices) + 1 if devices else None
    version = _single_log_version(text, source)

    return {
        "rows": rows,
        "avg_busbw": avg_busbw,
        "out_of_bounds": out_of_bounds,
        "nranks": nranks,
        "devices": devices,
        "hosts": hosts,
        "nthreads": nthreads,
        "ngpus": ngpus,
        "check_column": check,
        "nccl_version": version[0] if version else None,
    }
