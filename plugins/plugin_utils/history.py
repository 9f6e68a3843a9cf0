# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What changed between two drift reports (filter lockstep.gpu.drift_changes).

The verify role keeps each run's report in ``reports/history/<time>.json``
and compares the new report with the newest one there::

    drift_changes(report, previous=None) -> changes (dict)

Drifts are matched by host and component:

- ``new``: drifts of this report that the previous one did not have;
- ``resolved``: drifts of the previous report that this one does not have,
  on hosts this report still holds;
- ``changed``: drifts of both whose expected value, actual value or reason
  differs, each with ``previous_expected``, ``previous_actual`` and
  ``previous_reason``;
- ``hosts_added`` / ``hosts_removed``: hosts only in this report / only in
  the previous one (the drifts of a removed host are not "resolved");
- ``first_run``: true when there is no previous report (then every list is
  empty: a first run has nothing to compare with);
- ``previous``: the time of the previous run (its ``run.time``; None for a
  report that does not record it);
- ``error``: only when ``previous`` is JSON text that is not a report: why
  (then every list is empty, as for a first run, and the run goes on).

``previous`` is the earlier report or its JSON text (a history file as read
by ``lookup('file')``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import check_report


def _key(drift):
    return (str(drift["host"]), str(drift["component"]))


def drift_changes(report, previous=None):
    """New, resolved and changed drifts since ``previous``; see the module docstring."""
    check_report(report, "drift_changes")
    nothing = {"first_run": True, "previous": None, "new": [], "resolved": [], "changed": [],
               "hosts_added": [], "hosts_removed": []}
    if previous is None or previous == "" or previous == {}:
        return nothing
    if isinstance(previous, str):
        try:
            previous = json.loads(previous)
        except ValueError as exc:
            return dict(nothing, first_run=False, error=f"the previous report is not JSON: {exc}")
        if not isinstance(previous, Mapping) or not all(k in previous for k in ("hosts", "drifts")):
            return dict(nothing, first_run=False, error="the previous report is not a drift report")
    if not isinstance(previous, Mapping) or not all(k in previous for k in ("hosts", "drifts")):
        raise AnsibleFilterError(
            "drift_changes: previous must be an earlier report of lockstep.gpu.drift (reports/history/*.json), "
            f"got {str(previous)[:200]!r}"
        )
    run = previous.get("run")
    before = {_key(d): d for d in previous["drifts"]}
    now = {_key(d): d for d in report["drifts"]}
    hosts = {str(h) for h in report["hosts"]}
    previous_hosts = {str(h) for h in previous["hosts"]}
    changed = []
    for key, d in now.items():
        old = before.get(key)
        if old is not None and (old.get("expected"), old.get("actual"), old.get("reason")) != (
            d["expected"], d["actual"], d["reason"]
        ):
            changed.append(dict(d, previous_expected=old.get("expected"), previous_actual=old.get("actual"),
                                previous_reason=old.get("reason")))
    return {
        "first_run": False,
        "previous": run.get("time") if isinstance(run, Mapping) else None,
        "new": [d for key, d in now.items() if key not in before],
        "resolved": [d for key, d in before.items() if key not in now and key[0] in hosts],
        "changed": changed,
        "hosts_added": sorted(hosts - previous_hosts),
        "hosts_removed": sorted(previous_hosts - hosts),
    }
