"""lockstep.gpu.slurm_node_plan (issue 27): after a converge role slurm
resumes only the compute nodes Slurm took out of service for a cause the
converge fixes, and never a node an admin drained. Read on real sinfo
output of Slurm 22.05 (tests/fixtures/slurm, SOURCES.md) and on the
reasons slurmctld sets itself (quoted from its source, SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.filter.slurm_nodes import (
    parse_sinfo_nodes,
    slurm_drain_plan,
    slurm_node_plan,
    slurm_reason_problems,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/fixtures/slurm"
REASONS = yaml.safe_load((ROOT / "roles/slurm/defaults/main.yml").read_text())["slurm_resume_reasons"]
NODES = ["sl1", "sl2", "sl3"]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def line(node: str, state: str, reason: str, user: str = "slurm") -> str:
    return f"{node}|{state}|{user}|2026-12-05T19:36:27|{reason}\n"


def test_the_admin_drain_is_held_and_slurms_own_inval_is_resumed():
    plan = slurm_node_plan(fixture("sinfo_admin_drain_and_inval.txt"), NODES, REASONS)
    assert plan["ready"] == ["sl1"]
    assert plan["resume"] == ["sl2"]
    assert plan["held"] == ["sl3 drained: RMA: GPU 3 Xid 79 (set by root at 2026-12-05T19:36:27)"]
    assert plan["waiting"] == [] and plan["not_ready"] == ["sl2"]


def test_after_a_reconfigure_slurm_names_root_and_the_reason_still_decides():
    nodes = parse_sinfo_nodes(fixture("sinfo_after_reconfigure.txt"))
    assert nodes["sl2"]["user"] == "root" and nodes["sl2"]["state"] == "drained"
    plan = slurm_node_plan(fixture("sinfo_after_reconfigure.txt"), NODES, REASONS)
    assert plan["resume"] == ["sl2"]
    assert [held.split()[0] for held in plan["held"]] == ["sl3"]


def test_a_stopped_slurmd_is_down_not_responding_and_resumed():
    plan = slurm_node_plan(fixture("sinfo_slurmd_stopped.txt"), NODES, REASONS)
    assert plan["resume"] == ["sl2"]
    assert plan["details"]["sl2"].startswith("sl2 down")
    assert "Not responding" in plan["details"]["sl2"]


def test_every_node_idle_is_ready_and_nothing_else():
    plan = slurm_node_plan(fixture("sinfo_idle.txt"), NODES, REASONS)
    assert plan == {"ready": NODES, "resume": [], "waiting": [], "held": [], "not_ready": [],
                    "details": {"sl1": "sl1 idle", "sl2": "sl2 idle", "sl3": "sl3 idle"}}


# The reasons slurmctld sets itself (SOURCES.md: src/slurmctld/node_mgr.c,
# node_scheduler.c, ping_nodes.c of Slurm 22.05/23.x), each joined by ", "
# when there are several, and reasons admins write (issue 27, and Slurm's
# own examples of scontrol update).
@pytest.mark.parametrize("reason", [
    "Not responding",
    "Node unexpectedly rebooted",
    "Low RealMemory (reported:24105 < 100.00% of configured:999999)",
    "Low socket*core*thread count, Low CPUs",
    "Low TmpDisk",
    "gres/gpu count reported lower than configured (0 < 4)",
    "NO NETWORK ADDRESS FOUND",
])
def test_reasons_slurm_sets_for_causes_a_converge_fixes_are_resumed(reason):
    for state in ("down", "drained", "draining", "inval", "idle+drain"):
        assert slurm_node_plan(line("sl2", state, reason), ["sl2"], REASONS)["resume"] == ["sl2"], state


@pytest.mark.parametrize("reason", [
    "RMA: GPU 3 Xid 79",
    "maintenance",
    "Kill task failed",
    "Prolog error",
    "Job env setup error",
    "batch job complete failure",
    "replace DIMM; not responding to ipmi",
])
def test_any_other_reason_is_held_whoever_set_it(reason):
    for user in ("root", "slurm", "alice(1001)"):
        plan = slurm_node_plan(line("sl3", "drained", reason, user), ["sl3"], REASONS)
        assert plan["held"] == [f"sl3 drained: {reason} (set by {user} at 2026-12-05T19:36:27)"]
        assert plan["resume"] == [] and plan["not_ready"] == []


def test_a_draining_node_is_held_and_its_jobs_keep_running():
    plan = slurm_node_plan(line("sl3", "draining", "RMA: GPU 3 Xid 79", "root"), ["sl3"], REASONS)
    assert plan["held"][0].startswith("sl3 draining: RMA")


@pytest.mark.parametrize("text, detail", [
    ("", "sl2 not in sinfo"),
    ("sl2|unknown|root|Unknown|none\n", "sl2 unknown"),
    ("sl2|completing|root|Unknown|none\n", "sl2 completing"),
    ("sl2|down|root|Unknown|none\n", "sl2 down"),
    ("sl2|idle*|root|Unknown|none\n", "sl2 idle+not_responding"),
])
def test_nodes_not_yet_registered_or_completing_are_waited_for(text, detail):
    plan = slurm_node_plan(text, ["sl2"], REASONS)
    assert plan["waiting"] == ["sl2"] and plan["not_ready"] == ["sl2"]
    assert plan["details"]["sl2"] == detail


def test_a_node_in_two_partitions_is_read_once():
    text = line("sl2", "drained", "RMA", "root") + line("sl2", "drained", "RMA", "root")
    assert len(slurm_node_plan(text, ["sl2"], REASONS)["held"]) == 1


def test_a_site_may_treat_another_reason_as_automatic():
    text = line("sl3", "drained", "Kill task failed", "slurm")
    assert slurm_node_plan(text, ["sl3"], REASONS + ["Kill task failed"])["resume"] == ["sl3"]
    assert slurm_node_plan(text, ["sl3"], [])["held"]


def test_patterns_match_from_the_reason_start_only():
    text = line("sl3", "drained", "RMA after Not responding twice", "root")
    assert slurm_node_plan(text, ["sl3"], REASONS)["resume"] == []


def test_a_pattern_that_is_not_a_regular_expression_is_named():
    problems = slurm_reason_problems(["Not responding", "Low (RealMemory", "*"])
    assert len(problems) == 2
    assert problems[0].startswith("slurm_resume_reasons has 'Low (RealMemory', not a Python regular expression")
    assert slurm_reason_problems(REASONS) == []
    with pytest.raises(AnsibleFilterError, match="Low \\(RealMemory"):
        slurm_node_plan("", ["sl1"], ["Low (RealMemory"])


def test_a_resumed_node_whose_slurmd_does_not_answer_is_not_ready():
    plan = slurm_node_plan(fixture("sinfo_resumed_slurmd_stopped.txt"), NODES, REASONS)
    assert plan["ready"] == ["sl1"] and plan["waiting"] == ["sl2"]
    assert plan["details"]["sl2"] == "sl2 idle+not_responding"


# --- rolling upgrades: which of a batch's nodes the upgrade drains and resumes -------------------------

UPGRADE = "lockstep rolling upgrade: nccl"


def test_a_batch_in_service_is_drained_and_an_admin_drain_is_held():
    plan = slurm_drain_plan(fixture("sinfo_admin_drain_and_inval.txt"), ["sl1", "sl3"], UPGRADE, REASONS)
    assert plan["drain"] == ["sl1"] and plan["ours"] == [] and plan["absent"] == []
    assert plan["held"] == ["sl3 drained: RMA: GPU 3 Xid 79 (set by root at 2026-12-05T19:36:27)"]


def test_nodes_drained_with_the_upgrade_s_reason_are_its_own_to_resume():
    text = "".join([line("sl1", "drained", UPGRADE, "root"), line("sl2", "draining", UPGRADE, "root"),
                    line("sl3", "drained", UPGRADE + " (old)", "root")])
    plan = slurm_drain_plan(text, NODES, UPGRADE, REASONS)
    assert plan["ours"] == ["sl1", "sl2"] and plan["drain"] == []
    assert plan["held"] == [f"sl3 drained: {UPGRADE} (old) (set by root at 2026-12-05T19:36:27)"]


def test_a_node_slurm_does_not_list_is_upgraded_without_slurm_and_a_reasonless_down_is_drained():
    text = line("sl1", "down", "none")
    plan = slurm_drain_plan(text, ["sl1", "gpu9"], UPGRADE, REASONS)
    assert plan["drain"] == ["sl1"] and plan["absent"] == ["gpu9"]
    assert plan["details"]["gpu9"] == "gpu9 not in sinfo"


@pytest.mark.parametrize("reason", ["", "  ", "Not responding during the upgrade"])
def test_a_drain_reason_a_converge_would_resume_is_refused(reason):
    with pytest.raises(AnsibleFilterError, match="slurm_drain_reason .* is empty or matches slurm_resume_reasons"):
        slurm_drain_plan(fixture("sinfo_idle.txt"), NODES, reason, REASONS)
