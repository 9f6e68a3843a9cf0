# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift filters: group the same facts across hosts and report who differs.

Filters::

    lockstep_drift(facts, expected=None, ignore=None)     -> report (dict)
    lockstep_drift_table(report, drift_only=False, max_cell=40) -> str
    lockstep_drift_markdown(report)                        -> str
    lockstep_drift_html(report, title="Lockstep drift report", drift_only=False) -> str

Input
-----
``facts``: ``{host: {component: value}}``. A value is a str, int, float, bool
or None, or ``{"error": "message"}`` when the source could not be read on
that host.

``expected``: ``{component: value}`` declared in the inventory (may cover only
some components). A declared value is matched exactly, except a dict, which
is a constraint; its keys (all must hold):

- ``equals``: exact value;
- ``version_prefix``: ``"12.1"`` matches ``12.1`` and ``12.1.105``, not ``12.10``;
- ``min`` / ``max``: version bounds (inclusive), compared with
  ``lockstep_version_compare`` in ``scheme`` (default ``auto``); a value
  that does not start with a digit (after an epoch) is not a version and
  fails the bound;
- ``one_of``: list of allowed values;
- ``absent: true``: the component must not be present on any host.

Plain declared values compare exactly, but a number and its string form are
the same value (inventory ``12.1`` matches a fact ``"12.1"``); ``True`` never
equals ``1``.

``ignore``: component names or fnmatch patterns (case-sensitive) whose values
legitimately differ (hostnames, serials, UUIDs). A component that is both
ignored and declared in ``expected`` is checked: the declaration wins.

Expected value
--------------
Declared when present -- then even a uniformly wrong cluster drifts on every
host. Otherwise the majority over the hosts that could be read; "absent" is a
candidate too, so a component present on only a minority of hosts makes those
hosts drift as ``unexpected``, and one absent on a minority makes those hosts
drift as ``missing``. Ties go to the value held by the first host in sorted
order, and every host holding another value is still reported (the component
is flagged ``tie: true``). Unreadable hosts never vote.

Report
------
``{"hosts", "components", "ignored", "expected", "drifts", "by_component",
"ok"}`` (``ignored``: the components seen and skipped by ``ignore``);
each drift is ``{"host", "component", "expected", "actual", "reason"}`` with
reason ``differs`` | ``missing`` | ``unreadable`` | ``unexpected``. For
``unreadable`` the actual is the ``{"error": ...}`` dict; for ``missing`` it
is None. ``by_component[c]`` holds ``expected``, ``source`` (``declared`` |
``majority`` | ``none`` when no host could be read), ``deviating_hosts``,
``absent`` (the expectation is that the component is absent), ``tie`` and
``values``: ``[{"value", "hosts"}]``, the readable values with the hosts that
hold them, most common first. The renderers draw their cells from it.

The analysis is one pass over the facts (O(hosts x components)); 10,000 hosts
x 40 components take a fraction of a second.
"""

from __future__ import annotations

import fnmatch
import html
import importlib.util
import os
import re
import sys
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def _load_sibling(name):
    """Import a filter file from this directory.

    Ansible loads filter plugins by path under private module names, so a
    plain ``import lockstep_versions`` fails there; the unit tests put this
    directory on sys.path and import it by its name. Reuse that module when
    it is this very file, otherwise load the file by path.
    """
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    existing = sys.modules.get(name)
    if existing is not None and os.path.abspath(getattr(existing, "__file__", "") or "") == path:
        return existing
    modname = name if existing is None else f"_lockstep_filter_{name}"
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return module


_versions = _load_sibling("lockstep_versions")

REASONS = ("differs", "missing", "unreadable", "unexpected")
CONSTRAINT_KEYS = ("equals", "version_prefix", "min", "max", "scheme", "one_of", "absent")

_SCALARS = (str, int, float, type(None))


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<{self.name}>"


_UNREADABLE = _Marker("unreadable")
_ABSENT = _Marker("absent")


def _is_error(value):
    return isinstance(value, Mapping) and set(value) == {"error"}


def _slow_key(host, component, value):
    """Grouping key for anything that is not a plain str/int/float/None."""
    if isinstance(value, bool):
        return ("\0bool", value)
    if isinstance(value, str):  # str subclasses (Ansible's tagged strings)
        return str(value)
    if isinstance(value, (int, float)):
        return float(value) if isinstance(value, float) else int(value)
    if _is_error(value):
        return _UNREADABLE
    raise AnsibleFilterError(
        f"lockstep_drift: value of {component!r} on host {host!r} must be a string, number, "
        f"boolean, null or {{'error': message}}; got {value!r}"
    )


def _value_key(value):
    """Key of a declared plain value, in the same space as facts' keys."""
    t = type(value)
    if t in _SCALARS:
        return value
    return _slow_key("<expected>", "<expected>", value)


def _text_form(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _check_constraint(component, constraint):
    unknown = sorted(set(constraint) - set(CONSTRAINT_KEYS))
    if unknown:
        raise AnsibleFilterError(
            f"lockstep_drift: expected value of {component!r} has unknown constraint key(s) "
            f"{', '.join(map(repr, unknown))}; allowed: {', '.join(CONSTRAINT_KEYS)}"
        )
    if not any(k in constraint for k in CONSTRAINT_KEYS if k != "scheme"):
        raise AnsibleFilterError(
            f"lockstep_drift: expected value of {component!r} is an empty constraint {dict(constraint)!r}"
        )
    if "one_of" in constraint and not isinstance(constraint["one_of"], (list, tuple)):
        raise AnsibleFilterError(
            f"lockstep_drift: 'one_of' for {component!r} must be a list, got {constraint['one_of']!r}"
        )
    scheme = constraint.get("scheme", "auto")
    if scheme not in _versions.SCHEMES:
        raise AnsibleFilterError(
            f"lockstep_drift: unknown version scheme {scheme!r} for {component!r}; "
            f"use one of {', '.join(_versions.SCHEMES)}"
        )
    for bound in ("min", "max"):
        if bound in constraint:
            _versions._as_version_string(constraint[bound], f"{bound!r} bound of {component!r}")


def _plain_matches(declared, value):
    if _value_key(declared) == _value_key(value):
        return True
    a, b = _text_form(declared), _text_form(value)
    return a is not None and a == b


def _prefix_matches(prefix, value):
    text = _text_form(value)
    if text is None:
        return False
    prefix = str(prefix)
    if not text.startswith(prefix):
        return False
    return len(text) == len(prefix) or not text[len(prefix)].isalnum()


_LOOKS_LIKE_VERSION = re.compile(r"^\s*(?:\d+:)?\d")


def _version_ok(value, bound, scheme, want):
    text = _text_form(value)
    if text is None or not _LOOKS_LIKE_VERSION.match(text):
        return False  # not a version (dpkg would compare "x" above "2.0")
    try:
        return _versions.lockstep_version_compare(value, bound, scheme) * want >= 0
    except AnsibleFilterError:
        return False


def _constraint_matches(constraint, value):
    """Whether a present, readable ``value`` satisfies a declared constraint dict."""
    if constraint.get("absent"):
        return False
    if "equals" in constraint and not _plain_matches(constraint["equals"], value):
        return False
    if "one_of" in constraint and not any(_plain_matches(c, value) for c in constraint["one_of"]):
        return False
    if "version_prefix" in constraint and not _prefix_matches(constraint["version_prefix"], value):
        return False
    scheme = constraint.get("scheme", "auto")
    if "min" in constraint and not _version_ok(value, constraint["min"], scheme, 1):
        return False
    if "max" in constraint and not _version_ok(value, constraint["max"], scheme, -1):
        return False
    return True


def _ignore_matcher(ignore):
    if ignore is None:
        return lambda name: False
    if isinstance(ignore, str):
        ignore = [ignore]
    if not isinstance(ignore, (list, tuple, set, frozenset)):
        raise AnsibleFilterError(
            f"lockstep_drift: ignore must be a list of component names or patterns, got {ignore!r}"
        )
    patterns = []
    for item in ignore:
        if not isinstance(item, str):
            raise AnsibleFilterError(
                f"lockstep_drift: ignore entries must be strings, got {item!r}"
            )
        patterns.append(fnmatch.translate(item))
    if not patterns:
        return lambda name: False
    regex = re.compile("|".join(f"(?:{p})" for p in patterns))
    return lambda name: regex.match(str(name)) is not None


def lockstep_drift(facts, expected=None, ignore=None):
    """Compare the same components across hosts; see the module docstring."""
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(
            f"lockstep_drift: facts must be a mapping of host -> {{component: value}}, got {type(facts).__name__}"
        )
    if expected is None:
        expected = {}
    if not isinstance(expected, Mapping):
        raise AnsibleFilterError(
            f"lockstep_drift: expected must be a mapping of component -> value, got {expected!r}"
        )
    for comp, declared in expected.items():
        if isinstance(declared, Mapping) and not _is_error(declared):
            _check_constraint(comp, declared)
        elif not isinstance(declared, _SCALARS + (bool,)):
            raise AnsibleFilterError(
                f"lockstep_drift: expected value of {comp!r} must be a scalar or a constraint dict, "
                f"got {declared!r}"
            )
    is_ignored = _ignore_matcher(ignore)

    hosts = sorted(facts, key=str)
    host_index = {h: i for i, h in enumerate(hosts)}
    n_hosts = len(hosts)

    # One pass: per component, key -> [hosts] in sorted host order, plus the
    # first value object seen for each key (what the report shows).
    groups = {}
    reps = {}
    errors = {}
    ignored_cache = {}
    scalars = _SCALARS
    for h in hosts:
        row = facts[h]
        if not isinstance(row, Mapping):
            raise AnsibleFilterError(
                f"lockstep_drift: facts for host {h!r} must be a mapping of component -> value, got {row!r}"
            )
        for c, v in row.items():
            skip = ignored_cache.get(c)
            if skip is None:
                skip = ignored_cache[c] = bool(is_ignored(c)) and c not in expected
            if skip:
                continue
            k = v if type(v) in scalars else _slow_key(h, c, v)
            g = groups.get(c)
            if g is None:
                g = groups[c] = {}
                reps[c] = {}
            lst = g.get(k)
            if lst is None:
                g[k] = [h]
                reps[c][k] = v
            else:
                lst.append(h)
            if k is _UNREADABLE:
                errors.setdefault(c, {})[h] = v

    components = sorted(set(groups) | set(expected), key=str)
    drifts = []
    by_component = {}
    expected_out = {}
    all_hosts = set(hosts)

    for c in components:
        g = groups.get(c, {})
        rep = reps.get(c, {})
        unreadable_hosts = g.get(_UNREADABLE, [])
        present = sum(len(lst) for lst in g.values())
        missing_hosts = []
        if present < n_hosts:
            seen = set()
            for lst in g.values():
                seen.update(lst)
            missing_hosts = sorted(all_hosts - seen, key=host_index.__getitem__)
        value_keys = [k for k in g if k is not _UNREADABLE]
        tie = False

        if c in expected:
            declared = expected[c]
            source = "declared"
            exp_value = declared
            is_constraint = isinstance(declared, Mapping)
            absent = bool(is_constraint and declared.get("absent"))
            if is_constraint:
                bad_keys = [k for k in value_keys if not _constraint_matches(declared, rep[k])]
            else:
                bad_keys = [k for k in value_keys if not _plain_matches(declared, rep[k])]
            missing_is_drift = not absent
        else:
            # Majority vote over readable values and "absent"; ties go to the
            # candidate whose first holder sorts first.
            candidates = [(len(g[k]), -host_index[g[k][0]], k) for k in value_keys]
            if missing_hosts:
                candidates.append((len(missing_hosts), -host_index[missing_hosts[0]], _ABSENT))
            if not candidates:
                source, exp_value, absent, winner = "none", None, False, None
            else:
                best = max(candidates, key=lambda t: (t[0], t[1]))
                tie = sum(1 for t in candidates if t[0] == best[0]) > 1
                winner = best[2]
                source = "majority"
                absent = winner is _ABSENT
                exp_value = None if absent else rep[winner]
            bad_keys = [k for k in value_keys if k is not winner]
            missing_is_drift = not absent and source != "none"

        expected_out[c] = exp_value
        deviating = []
        for k in bad_keys:
            reason = "unexpected" if absent else "differs"
            value = rep[k]
            for h in g[k]:
                drifts.append(
                    {
                        "host": h,
                        "component": c,
                        "expected": exp_value,
                        "actual": value,
                        "reason": reason,
                    }
                )
            deviating.extend(g[k])
        if missing_is_drift:
            for h in missing_hosts:
                drifts.append(
                    {
                        "host": h,
                        "component": c,
                        "expected": exp_value,
                        "actual": None,
                        "reason": "missing",
                    }
                )
            deviating.extend(missing_hosts)
        if unreadable_hosts:
            errs = errors[c]
            for h in unreadable_hosts:
                drifts.append(
                    {
                        "host": h,
                        "component": c,
                        "expected": exp_value,
                        "actual": dict(errs[h]),
                        "reason": "unreadable",
                    }
                )
            deviating.extend(unreadable_hosts)
        deviating.sort(key=host_index.__getitem__)

        ordered = sorted(value_keys, key=lambda k: (-len(g[k]), host_index[g[k][0]]))
        by_component[c] = {
            "expected": exp_value,
            "source": source,
            "absent": absent,
            "tie": tie,
            "deviating_hosts": deviating,
            "values": [{"value": rep[k], "hosts": list(g[k])} for k in ordered],
        }

    drifts.sort(key=lambda d: (host_index[d["host"]], str(d["component"])))
    return {
        "hosts": hosts,
        "components": components,
        "ignored": sorted((c for c, skip in ignored_cache.items() if skip), key=str),
        "expected": expected_out,
        "drifts": drifts,
        "by_component": by_component,
        "ok": not drifts,
    }


# --------------------------------------------------------------------------- #
# Rendering
# --------------------------------------------------------------------------- #


def _check_report(report, who):
    if not isinstance(report, Mapping) or not all(
        k in report for k in ("hosts", "components", "drifts", "by_component")
    ):
        raise AnsibleFilterError(
            f"{who}: expects the report returned by lockstep_drift, got {str(report)[:200]!r}"
        )


def format_value(value):
    """Text form of a fact value for tables."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_error(value):
        return f"unreadable: {value['error']}"
    return str(value)


def format_expected(value, source="declared", absent=False):
    """Text form of an expectation, constraints spelled out."""
    if absent:
        return "(absent)"
    if source == "none":
        return "(none)"
    if isinstance(value, Mapping):
        parts = []
        if "equals" in value:
            parts.append(format_value(value["equals"]))
        if "one_of" in value:
            parts.append("one of " + ", ".join(format_value(v) for v in value["one_of"]))
        if "version_prefix" in value:
            parts.append(f"{value['version_prefix']}*")
        if "min" in value:
            parts.append(f">= {value['min']}")
        if "max" in value:
            parts.append(f"<= {value['max']}")
        return " and ".join(parts) or str(dict(value))
    return format_value(value)


def format_actual(drift):
    if drift["reason"] == "missing":
        return "(missing)"
    return format_value(drift["actual"])


def lockstep_drift_line(drift):
    """One drift as a line: ``dp3: nccl.package expected X, actual Y (differs)``."""
    if not isinstance(drift, Mapping) or not all(
        k in drift for k in ("host", "component", "expected", "reason")
    ):
        raise AnsibleFilterError(
            f"lockstep_drift_line: expects one entry of a report's drifts, got {str(drift)[:200]!r}"
        )
    return (
        f"{drift['host']}: {drift['component']} expected {format_expected(drift['expected'])}, "
        f"actual {format_actual(drift)} ({drift['reason']})"
    )


def _grid(report, drift_only):
    """Rows/columns and per-cell (text, drifted) for the matrix renderers."""
    by_component = report["by_component"]
    drift_at = {(d["host"], d["component"]): d for d in report["drifts"]}
    components = list(report["components"])
    hosts = list(report["hosts"])
    if drift_only:
        drifted_c = {d["component"] for d in report["drifts"]}
        drifted_h = {d["host"] for d in report["drifts"]}
        components = [c for c in components if c in drifted_c]
        hosts = [h for h in hosts if h in drifted_h]
    cells = {}
    for c in components:
        info = by_component.get(c, {})
        for entry in info.get("values", ()):
            text = format_value(entry["value"])
            for h in entry["hosts"]:
                cells[(h, c)] = text
    rows = []
    for c in components:
        info = by_component.get(c, {})
        exp = format_expected(
            info.get("expected"), info.get("source", "declared"), info.get("absent", False)
        )
        row = []
        for h in hosts:
            d = drift_at.get((h, c))
            if d is not None:
                row.append((format_actual(d), True))
            else:
                row.append((cells.get((h, c), "-"), False))
        rows.append((c, exp, row))
    return hosts, rows


def _clip(text, width):
    text = " ".join(str(text).split())  # no newlines/tabs in a fixed-width table
    if width and len(text) > width:
        return text[: max(1, width - 1)] + "~"
    return text


def _summary(report):
    drifts = report["drifts"]
    hosts = {d["host"] for d in drifts}
    comps = {d["component"] for d in drifts}
    if not drifts:
        return (
            f"No drift: {len(report['hosts'])} host(s) agree on "
            f"{len(report['components'])} component(s)."
        )
    return (
        f"{len(drifts)} drift(s) on {len(hosts)} of {len(report['hosts'])} host(s) "
        f"in {len(comps)} of {len(report['components'])} component(s)."
    )


def lockstep_drift_table(report, drift_only=False, max_cell=40):
    """Fixed-width text table, components down, hosts across; drifted cells as ``*value*``."""
    _check_report(report, "lockstep_drift_table")
    hosts, rows = _grid(report, drift_only)
    header = ["component", "expected"] + [str(h) for h in hosts]
    body = []
    for c, exp, row in rows:
        line = [_clip(c, max_cell), _clip(exp, max_cell)]
        for text, drifted in row:
            text = _clip(text, max_cell)
            line.append(f"*{text}*" if drifted else text)
        body.append(line)
    widths = [len(h) for h in header]
    for line in body:
        for i, cell in enumerate(line):
            widths[i] = max(widths[i], len(cell))

    def fmt(line):
        return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip()

    out = [fmt(header), "  ".join("-" * w for w in widths)]
    out.extend(fmt(line) for line in body)
    out.append("")
    out.append(
        _summary(report) + (" Drifted cells are marked *value*." if report["drifts"] else "")
    )
    return "\n".join(out)


def _md(text):
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def lockstep_drift_markdown(report):
    """Markdown: summary, a per-component table and one row per drift."""
    _check_report(report, "lockstep_drift_markdown")
    by_component = report["by_component"]
    out = ["# Lockstep drift report", "", _summary(report), ""]
    out += [
        "| component | expected | source | deviating hosts |",
        "| --- | --- | --- | --- |",
    ]
    for c in report["components"]:
        info = by_component.get(c, {})
        exp = format_expected(
            info.get("expected"), info.get("source", "declared"), info.get("absent", False)
        )
        dev = info.get("deviating_hosts", [])
        source = info.get("source", "") + (" (tie)" if info.get("tie") else "")
        out.append(
            f"| {_md(c)} | {_md(exp)} | {_md(source)} | {_md(', '.join(map(str, dev))) or '-'} |"
        )
    out.append("")
    if report["drifts"]:
        out += [
            "## Drifts",
            "",
            "| host | component | expected | actual | reason |",
            "| --- | --- | --- | --- | --- |",
        ]
        for d in report["drifts"]:
            info = by_component.get(d["component"], {})
            exp = format_expected(
                d["expected"], info.get("source", "declared"), info.get("absent", False)
            )
            out.append(
                f"| {_md(d['host'])} | {_md(d['component'])} | {_md(exp)} | "
                f"{_md(format_actual(d))} | {_md(d['reason'])} |"
            )
        out.append("")
    return "\n".join(out)


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem; color: #1b1b1b; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
p.summary { font-weight: 600; } p.ok { color: #1a7f37; } p.bad { color: #b3261e; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #d0d7de; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; white-space: nowrap; }
th { background: #f6f8fa; position: sticky; top: 0; }
td.drift { background: #ffebe9; color: #82071e; font-weight: 600; }
td.expected { color: #57606a; font-style: italic; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
""".strip()


def lockstep_drift_html(report, title="Lockstep drift report", drift_only=False):
    """One self-contained HTML page: the matrix (drifted cells class ``drift``) and every drift."""
    _check_report(report, "lockstep_drift_html")
    esc = lambda s: html.escape(str(s), quote=True)  # noqa: E731
    hosts, rows = _grid(report, drift_only)
    by_component = report["by_component"]
    ok = not report["drifts"]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{esc(title)}</h1>",
        f'<p class="summary {"ok" if ok else "bad"}">{esc(_summary(report))}</p>',
        "<h2>Components by host</h2>",
    ]
    if drift_only:
        out.append("<p>Only components and hosts with drift are shown.</p>")
    out.append('<div class="scroll"><table class="matrix">')
    out.append(
        "<thead><tr><th>component</th><th>expected</th>"
        + "".join(f"<th>{esc(h)}</th>" for h in hosts)
        + "</tr></thead>"
    )
    out.append("<tbody>")
    for c, exp, row in rows:
        cells = [f"<th>{esc(c)}</th>", f'<td class="expected">{esc(exp)}</td>']
        for text, drifted in row:
            cls = ' class="drift"' if drifted else ""
            cells.append(f"<td{cls}>{esc(text)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")

    out.append(f"<h2>Drifts ({len(report['drifts'])})</h2>")
    if report["drifts"]:
        out.append('<div class="scroll"><table class="drifts">')
        out.append(
            "<thead><tr><th>host</th><th>component</th><th>expected</th>"
            "<th>actual</th><th>reason</th></tr></thead><tbody>"
        )
        for d in report["drifts"]:
            info = by_component.get(d["component"], {})
            exp = format_expected(
                d["expected"], info.get("source", "declared"), info.get("absent", False)
            )
            out.append(
                f"<tr><td>{esc(d['host'])}</td><td>{esc(d['component'])}</td>"
                f'<td>{esc(exp)}</td><td class="drift">{esc(format_actual(d))}</td>'
                f"<td>{esc(d['reason'])}</td></tr>"
            )
        out.append("</tbody></table></div>")
    else:
        out.append("<p>None.</p>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


class FilterModule:
    """Lockstep drift filters."""

    def filters(self):
        return {
            "lockstep_drift": lockstep_drift,
            "lockstep_drift_table": lockstep_drift_table,
            "lockstep_drift_markdown": lockstep_drift_markdown,
            "lockstep_drift_html": lockstep_drift_html,
            "lockstep_drift_line": lockstep_drift_line,
        }
