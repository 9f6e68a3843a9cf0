# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift analysis: group the same facts across hosts and report who differs.

The filter lockstep.gpu.drift calls :func:`drift`; the renderers are
report_table, report_markdown and report_html beside this file::

    drift(facts, expected=None, ignore=None, locked=None, retake=None) -> report (dict)
    stack_lock(report)                            -> {component: value}
    rollout_lock(lock, reference, patterns)       -> {component: value}
    drift_table(report, drift_only=False, max_cell=40, max_hosts=None, width=0, changes=True) -> str
    drift_markdown(report)                        -> str
    drift_html(report, title="Lockstep drift report", drift_only=False, fold_above=12) -> str

and history.py compares a report with the previous run's::

    drift_changes(report, previous=None)          -> changes (dict)

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
  ``version_compare`` in ``scheme`` (default ``auto``); a value
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

``locked``: the stack lock (``inventories/<cluster>/stack-lock.yml``, written
by playbooks/lock.yml with :func:`stack_lock` from a clean run):
``{component: value}`` recorded when the cluster verified clean. Each of its
components not declared in ``expected`` (and not ignored) is checked on
every host like a declared one, with source ``lock``: a change that reached
every node alike drifts on each. With a lock, a component it lacks is
compared by majority and flagged ``new`` (listed in the report's ``new``).

``retake``: fnmatch patterns (case-sensitive) of lock components taken anew
(playbooks/add_node.yml: ``slurm.conf_sha256``, which names every node):
left out of the lock, compared by majority and flagged ``retaken`` (listed
in the report's ``retaken``), not ``new``.

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
"ok", "locked", "new", "retaken", "lockstep_version"}`` (``locked``: whether a
lock was given; ``new``: the components it lacks; ``retaken``: those
``retake`` took out of it) (``ignored``: the components seen and skipped by
``ignore``; ``lockstep_version``: the collection's version);
each drift is ``{"host", "component", "expected", "actual", "reason"}`` with
reason ``differs`` | ``missing`` | ``unreadable`` | ``unexpected``. For
``unreadable`` the actual is the ``{"error": ...}`` dict; for ``missing`` it
is None. ``by_component[c]`` holds ``expected``, ``source`` (``declared`` |
``lock`` | ``majority`` | ``none`` when no host could be read), ``new`` (only
with a lock that lacks it), ``deviating_hosts``,
``absent`` (the expectation is that the component is absent), ``tie`` and
``values``: ``[{"value", "hosts"}]``, the readable values with the hosts that
hold them, most common first. The renderers draw their cells from it.

The analysis is one pass over the facts (O(hosts x components)); 10,000 hosts
x 40 components take a fraction of a second.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils import versions as _versions
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import is_error

# The collection's version (galaxy.yml's; a unit test keeps them equal): every
# report says which Lockstep made it.
LOCKSTEP_VERSION = "0.1.0"

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


def _slow_key(host, component, value):
    """Grouping key for anything that is not a plain str/int/float/None."""
    if isinstance(value, bool):
        return ("\0bool", value)
    if isinstance(value, str):  # str subclasses (Ansible's tagged strings)
        return str(value)
    if isinstance(value, (int, float)):
        return float(value) if isinstance(value, float) else int(value)
    if is_error(value):
        return _UNREADABLE
    raise AnsibleFilterError(
        f"drift: value of {component!r} on host {host!r} must be a string, number, "
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
            f"drift: expected value of {component!r} has unknown constraint key(s) "
            f"{', '.join(map(repr, unknown))}; allowed: {', '.join(CONSTRAINT_KEYS)}"
        )
    if not any(k in constraint for k in CONSTRAINT_KEYS if k != "scheme"):
        raise AnsibleFilterError(
            f"drift: expected value of {component!r} is an empty constraint {dict(constraint)!r}"
        )
    if "one_of" in constraint and not isinstance(constraint["one_of"], (list, tuple)):
        raise AnsibleFilterError(
            f"drift: 'one_of' for {component!r} must be a list, got {constraint['one_of']!r}"
        )
    scheme = constraint.get("scheme", "auto")
    if scheme not in _versions.SCHEMES:
        raise AnsibleFilterError(
            f"drift: unknown version scheme {scheme!r} for {component!r}; "
            f"use one of {', '.join(_versions.SCHEMES)}"
        )
    for bound in ("min", "max"):
        if bound in constraint:
            _versions.as_version_string(constraint[bound], f"{bound!r} bound of {component!r}")


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
        return _versions.version_compare(value, bound, scheme) * want >= 0
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


def _ignore_matcher(ignore, option="ignore"):
    if ignore is None:
        return lambda name: False
    if isinstance(ignore, str):
        ignore = [ignore]
    if not isinstance(ignore, (list, tuple, set, frozenset)):
        raise AnsibleFilterError(
            f"drift: {option} must be a list of component names or patterns, got {ignore!r}"
        )
    patterns = []
    for item in ignore:
        if not isinstance(item, str):
            raise AnsibleFilterError(
                f"drift: {option} entries must be strings, got {item!r}"
            )
        patterns.append(fnmatch.translate(item))
    if not patterns:
        return lambda name: False
    regex = re.compile("|".join(f"(?:{p})" for p in patterns))
    return lambda name: regex.match(str(name)) is not None


def _with_lock(expected, locked, is_ignored):
    """expected over the stack lock (less its ignored components): {component: value} and
    {component: 'declared' | 'lock'}."""
    if locked is None:
        locked = {}
    if not isinstance(locked, Mapping):
        raise AnsibleFilterError(f"drift: the stack lock must be a mapping of component -> value, got {locked!r}")
    merged = {c: v for c, v in locked.items() if not is_ignored(c)}
    merged.update(expected)
    return merged, {c: "declared" if c in expected else "lock" for c in merged}


def drift(facts, expected=None, ignore=None, locked=None, retake=None):
    """Compare the same components across hosts; see the module docstring."""
    is_retaken = _ignore_matcher(retake, "retake")
    lock_given = bool(locked)
    if isinstance(locked, Mapping):
        locked = {c: v for c, v in locked.items() if not is_retaken(c)}
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(
            f"drift: facts must be a mapping of host -> {{component: value}}, got {type(facts).__name__}"
        )
    if expected is None:
        expected = {}
    if not isinstance(expected, Mapping):
        raise AnsibleFilterError(
            f"drift: expected must be a mapping of component -> value, got {expected!r}"
        )
    is_ignored = _ignore_matcher(ignore)
    expected, sources = _with_lock(expected, locked, is_ignored)
    for comp, declared in expected.items():
        if isinstance(declared, Mapping) and not is_error(declared):
            _check_constraint(comp, declared)
        elif not isinstance(declared, _SCALARS + (bool,)):
            raise AnsibleFilterError(
                f"drift: expected value of {comp!r} must be a scalar or a constraint dict, "
                f"got {declared!r}"
            )

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
                f"drift: facts for host {h!r} must be a mapping of component -> value, got {row!r}"
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
            source = sources[c]
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
        if lock_given and c not in expected:
            by_component[c]["retaken" if is_retaken(c) else "new"] = True

    drifts.sort(key=lambda d: (host_index[d["host"]], str(d["component"])))
    return {
        "hosts": hosts,
        "components": components,
        "ignored": sorted((c for c, skip in ignored_cache.items() if skip), key=str),
        "expected": expected_out,
        "drifts": drifts,
        "by_component": by_component,
        "ok": not drifts,
        "locked": lock_given,
        "new": [c for c in components if by_component[c].get("new")],
        "retaken": [c for c in components if by_component[c].get("retaken")],
        "lockstep_version": LOCKSTEP_VERSION,
    }


def stack_lock(report):
    """{component: value} of a report without drifts: each component's one value, what playbooks/lock.yml
    writes as the cluster's declared state. Components no host has, or that hosts may lack (the majority
    is absence), are left out; a report with drifts is an error (lock a cluster that verifies clean)."""
    if report.get("drifts"):
        hosts = sorted({str(d["host"]) for d in report["drifts"]})
        raise AnsibleFilterError(f"stack_lock: the nodes drift ({len(report['drifts'])} drift(s) on "
                                 f"{', '.join(hosts)}): lock a cluster that verifies clean")
    lock = {}
    for c, info in report["by_component"].items():
        if info.get("absent") or len(info.get("values") or ()) != 1:
            continue
        lock[c] = info["values"][0]["value"]
    return dict(sorted(lock.items()))


def rollout_lock(lock, reference, patterns):
    """The lock a rolling upgrade checks its batches against (playbooks/rolling_upgrade.yml): the stack lock
    ``lock`` ({component: value}) with each component that matches ``patterns`` (fnmatch, case-sensitive: what
    the upgrade changes, e.g. ``nccl.*``) taken from ``reference``, the canary's components after its upgrade. A
    component the canary no longer has leaves the lock; one it cannot read ({"error": ...}) keeps its locked
    value, so that the canary drifts on it. Every other component keeps its locked value: the upgrade must not
    change it, on the canary or on any later node."""
    patterns = [str(p) for p in patterns or []]
    new = {}
    for c, value in (lock or {}).items():
        if not any(fnmatch.fnmatchcase(c, p) for p in patterns):
            new[c] = value
        elif c in (reference or {}) and is_error(reference[c]):
            new[c] = value
    for c, value in (reference or {}).items():
        if any(fnmatch.fnmatchcase(c, p) for p in patterns) and not is_error(value):
            new[c] = value
    return dict(sorted(new.items()))
