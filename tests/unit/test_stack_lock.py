"""The stack lock (issue 27): lockstep.gpu.stack_lock records a clean
cluster's components, and lockstep.gpu.drift checks every node against it,
so that a change which reached every node alike drifts on each of them,
while without a lock the same change passes as before (nodes compared by
majority). On the components of the demo's real bundles
(tests/fixtures/bundles) where they fit, and on small clusters.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import drift, rollout_lock, stack_lock
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_html import drift_html
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_markdown import drift_markdown

GOOD, OLD = "2.18.3-1+cuda12.1", "2.18.1-1+cuda12.1"
NODES = ("dp1", "dp2", "dp3")


def cluster(nccl=GOOD, **extra):
    return {name: {"nccl.package": nccl, "cuda.default": "12.1", "os.release": "Debian 12",
                   "os.hostname": name, **extra} for name in NODES}


def test_the_lock_of_a_clean_cluster_holds_each_agreed_value_and_leaves_out_ignored_ones():
    report = drift(cluster(), {}, ["os.hostname"])
    assert report["ok"] and not report["locked"] and report["new"] == []
    assert stack_lock(report) == {"cuda.default": "12.1", "nccl.package": GOOD, "os.release": "Debian 12"}


def test_a_component_declared_absent_stays_out_of_the_lock_and_a_null_value_stays_in():
    report = drift(cluster(**{"pkg.extra": None}), {"pkg.telnet": {"absent": True}}, ["os.hostname"])
    lock = stack_lock(report)
    assert "pkg.telnet" not in lock and lock["pkg.extra"] is None


def test_a_change_on_every_node_alike_passes_by_majority_and_drifts_everywhere_with_the_lock():
    lock = stack_lock(drift(cluster(), {}, ["os.hostname"]))
    moved = cluster(nccl=OLD)
    assert drift(moved, {}, ["os.hostname"])["ok"]
    report = drift(moved, {}, ["os.hostname"], lock)
    assert report["locked"] and not report["ok"]
    assert [(d["host"], d["component"], d["expected"], d["actual"]) for d in report["drifts"]] == [
        (name, "nccl.package", GOOD, OLD) for name in NODES]
    assert report["by_component"]["nccl.package"]["source"] == "lock"


def test_the_inventorys_declaration_wins_over_the_lock():
    lock = stack_lock(drift(cluster(), {}, ["os.hostname"]))
    report = drift(cluster(nccl=OLD), {"nccl.package": {"min": "2.18"}}, ["os.hostname"], lock)
    assert report["ok"] and report["by_component"]["nccl.package"]["source"] == "declared"


def test_an_ignored_component_in_the_lock_is_not_checked():
    lock = stack_lock(drift(cluster(), {}, ["os.hostname"]))
    lock["os.hostname"] = "dp1"
    report = drift(cluster(), {}, ["os.hostname"], lock)
    assert report["ok"] and "os.hostname" in report["ignored"]


def test_a_component_the_lock_lacks_is_new_and_still_compared_by_majority():
    lock = stack_lock(drift(cluster(), {}, ["os.hostname"]))
    report = drift(cluster(**{"pkg.htop": "3.2.2-2"}), {}, ["os.hostname"], lock)
    assert report["ok"] and report["new"] == ["pkg.htop"]
    assert report["by_component"]["pkg.htop"] | {"values": None} == {
        "expected": "3.2.2-2", "source": "majority", "absent": False, "tie": False, "deviating_hosts": [],
        "values": None, "new": True}
    facts = cluster(**{"pkg.htop": "3.2.2-2"})
    facts["dp2"]["pkg.htop"] = "3.0.5-7"
    assert [d["host"] for d in drift(facts, {}, ["os.hostname"], lock)["drifts"]] == ["dp2"]


def test_a_retaken_component_of_the_lock_is_compared_by_majority_and_flagged_retaken_not_new():
    """playbooks/add_node.yml's verify: slurm.conf names every node, so its hash moves alike everywhere."""
    lock = stack_lock(drift(cluster(**{"slurm.conf_sha256": "aa"}), {}, ["os.hostname"]))
    facts = cluster(**{"slurm.conf_sha256": "bb"})
    report = drift(facts, {}, ["os.hostname"], lock, ["slurm.conf_*"])
    assert report["ok"] and report["locked"] and report["new"] == [] and report["retaken"] == ["slurm.conf_sha256"]
    info = report["by_component"]["slurm.conf_sha256"]
    assert (info["source"], info["expected"], info.get("retaken"), info.get("new")) == ("majority", "bb", True, None)
    assert "retaken: in the stack lock" in drift_html(report)
    # Still compared: the node that differs from the others drifts; every other lock component still binds.
    facts["dp2"]["slurm.conf_sha256"] = "cc"
    facts["dp3"]["nccl.package"] = OLD
    assert [(d["host"], d["component"]) for d in drift(facts, {}, ["os.hostname"], lock, ["slurm.conf_*"])[
        "drifts"]] == [("dp2", "slurm.conf_sha256"), ("dp3", "nccl.package")]
    with pytest.raises(AnsibleFilterError, match="drift: retake must be a list of component names or patterns"):
        drift(facts, {}, [], lock, 7)


def test_a_component_of_the_lock_that_a_node_lacks_is_missing_there():
    lock = stack_lock(drift(cluster(), {}, ["os.hostname"]))
    facts = cluster()
    del facts["dp3"]["nccl.package"]
    assert [(d["host"], d["reason"]) for d in drift(facts, {}, ["os.hostname"], lock)["drifts"]] == [
        ("dp3", "missing")]


def test_a_cluster_that_drifts_cannot_be_locked():
    facts = cluster()
    facts["dp2"]["nccl.package"] = OLD
    with pytest.raises(AnsibleFilterError, match="1 drift\\(s\\) on dp2\\): lock a cluster that verifies clean"):
        stack_lock(drift(facts, {}, ["os.hostname"]))


def test_a_lock_that_is_not_a_mapping_is_named():
    with pytest.raises(AnsibleFilterError, match="the stack lock must be a mapping"):
        drift(cluster(), {}, [], ["nccl.package"])


def test_the_reports_say_which_expectations_come_from_the_lock():
    lock = stack_lock(drift(cluster(), {}, ["os.hostname"]))
    report = drift(cluster(nccl=OLD, **{"pkg.htop": "3.2.2-2"}), {"os.release": "Debian 12"}, ["os.hostname"], lock)
    html = drift_html(report)
    assert "2 from the stack lock" in html and "1 declared" in html
    assert "not in the stack lock: pkg.htop" in html
    assert 'data-component="nccl.package" data-source="lock"' in html
    assert "| nccl.package | 2.18.3-1+cuda12.1 | lock |" in drift_markdown(report)


# --- rolling upgrades: the canary's values of what the upgrade changes --------------------------------

NEW = "2.19.3-1+cuda12.3"


def test_the_rollout_lock_takes_the_canary_s_values_of_the_upgraded_components_only():
    lock = {"nccl.package": GOOD, "nccl.header": "2.18.3", "cuda.default": "12.1", "os.release": "Debian 12"}
    canary = {"nccl.package": NEW, "nccl.header": "2.19.3", "cuda.default": "12.2", "os.release": "Debian 12",
              "os.hostname": "dp1"}
    new = rollout_lock(lock, canary, ["nccl.*"])
    # cuda.default keeps the lock's value: the canary's 12.2 is a drift the upgrade must not bring.
    assert new == {"cuda.default": "12.1", "nccl.header": "2.19.3", "nccl.package": NEW, "os.release": "Debian 12"}
    assert list(new) == sorted(new)
    report = drift({"dp1": canary}, {}, ["os.hostname"], new)
    assert [(d["host"], d["component"], d["expected"], d["actual"]) for d in report["drifts"]] == \
        [("dp1", "cuda.default", "12.1", "12.2")]


def test_a_later_node_that_differs_from_the_canary_drifts_against_the_rollout_lock():
    lock = {"nccl.package": GOOD, "nccl.header": "2.18.3", "os.release": "Debian 12"}
    new = rollout_lock(lock, {"nccl.package": NEW, "nccl.header": "2.19.3", "os.release": "Debian 12"}, ["nccl.*"])
    broken = {"dp2": {"nccl.package": NEW, "nccl.header": "2.19.1", "os.release": "Debian 12"}}
    report = drift(broken, {}, [], new)
    assert not report["ok"]
    assert [(d["host"], d["component"], d["expected"], d["actual"]) for d in report["drifts"]] == \
        [("dp2", "nccl.header", "2.19.3", "2.19.1")]
    assert report["by_component"]["nccl.header"]["source"] == "lock"


def test_what_the_canary_lacks_leaves_the_lock_and_what_it_cannot_read_stays():
    lock = {"nccl.package": GOOD, "nccl.dev_package": GOOD, "nccl.header": "2.18.3"}
    canary = {"nccl.package": NEW, "nccl.header": {"error": "nccl.h: Permission denied"}}
    assert rollout_lock(lock, canary, ["nccl.*"]) == {"nccl.header": "2.18.3", "nccl.package": NEW}


def test_without_patterns_or_lock_the_rollout_lock_is_the_lock_or_the_canary_s_matches():
    assert rollout_lock({"a": 1}, {"a": 2}, []) == {"a": 1}
    assert rollout_lock({}, {"nccl.package": NEW, "os.release": "Debian 12"}, ["nccl.*"]) == {"nccl.package": NEW}
    assert rollout_lock(None, None, None) == {}
