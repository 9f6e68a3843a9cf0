# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drift_changes: what changed between the previous run's report (a
reports/history/*.json) and this run's, matched by host and component."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.filter.drift_report import FilterModule
from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import drift
from ansible_collections.lockstep.gpu.plugins.plugin_utils.history import drift_changes

GOOD, OLD = "2.18.3-1+cuda12.1", "2.18.1-1+cuda12.1"


def _facts(n=3):
    return {f"dr{i}": {"nccl.package": GOOD, "driver.version": "535.261.03", "os.release": "Debian 12"}
            for i in range(1, n + 1)}


def _run(facts, time=None, **kwargs):
    report = drift(facts, **kwargs)
    if time:
        report["run"] = {"time": time}
    return json.loads(json.dumps(report))  # as the history file holds it


def _keys(drifts):
    return [(d["host"], d["component"]) for d in drifts]


def test_a_drift_introduced_between_two_runs_is_exactly_the_new_one():
    before = _run(_facts(), "2025-06-01T11:00:00.000000Z")
    facts = _facts()
    facts["dr3"]["nccl.package"] = OLD
    now = _run(facts)
    changes = drift_changes(now, before)
    assert changes["first_run"] is False
    assert changes["previous"] == "2025-06-01T11:00:00.000000Z"
    assert changes["new"] == [{"host": "dr3", "component": "nccl.package", "expected": GOOD, "actual": OLD,
                               "reason": "differs"}]
    assert changes["resolved"] == changes["changed"] == changes["hosts_added"] == changes["hosts_removed"] == []
    # And back: the same drift is resolved, nothing is new.
    back = drift_changes(_run(_facts()), now)
    assert _keys(back["resolved"]) == [("dr3", "nccl.package")] and back["new"] == []


def test_a_drift_that_stays_is_neither_new_nor_resolved_and_another_value_is_noted():
    facts = _facts()
    facts["dr3"]["nccl.package"] = OLD
    before = _run(facts, "t1")
    assert drift_changes(_run(facts), before)["new"] == []
    facts["dr3"]["nccl.package"] = "2.17.1-1+cuda12.1"
    changes = drift_changes(_run(facts), before)
    assert changes["new"] == [] and changes["resolved"] == []
    assert _keys(changes["changed"]) == [("dr3", "nccl.package")]
    assert changes["changed"][0]["previous_actual"] == OLD
    assert changes["changed"][0]["actual"] == "2.17.1-1+cuda12.1"


def test_hosts_that_come_and_go_are_listed_and_a_gone_hosts_drifts_are_not_resolved():
    facts = _facts(3)
    facts["dr3"]["nccl.package"] = OLD
    before = _run(facts)
    facts = _facts(4)
    del facts["dr3"]
    facts["dr4"]["nccl.package"] = OLD
    changes = drift_changes(_run(facts), before)
    assert changes["hosts_added"] == ["dr4"] and changes["hosts_removed"] == ["dr3"]
    assert changes["resolved"] == []
    assert _keys(changes["new"]) == [("dr4", "nccl.package")]


def test_first_run_and_a_history_file_that_is_not_a_report():
    now = _run(_facts())
    for nothing in (None, "", {}):
        first = drift_changes(now, nothing)
        assert first["first_run"] is True and first["new"] == [] and first["resolved"] == []
    # JSON text, as lookup('file') reads a history file.
    facts = _facts()
    facts["dr1"]["driver.version"] = "535.104.05"
    text = json.dumps(_run(facts, "t0"))
    assert _keys(drift_changes(now, text)["resolved"]) == [("dr1", "driver.version")]
    # A truncated file is named, not a failed run.
    broken = drift_changes(now, text[: len(text) // 2])
    assert broken["first_run"] is False and broken["new"] == [] and "not JSON" in broken["error"]
    assert "not a drift report" in drift_changes(now, "[1, 2]")["error"]


def test_bad_input_is_named():
    now = _run(_facts())
    with pytest.raises(AnsibleFilterError, match="previous must be an earlier report"):
        drift_changes(now, {"hosts": []})
    with pytest.raises(AnsibleFilterError, match="drift_changes: expects the report"):
        drift_changes({"not": "a report"}, now)


def test_the_filter_is_exposed():
    assert FilterModule().filters()["drift_changes"] is drift_changes
