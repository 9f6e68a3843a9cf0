"""The train_check verdict on real results of the job (tests/fixtures/train_check/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.lockstep.gpu.plugins.filter.train_check import train_check, train_check_srun
from ansible_collections.lockstep.gpu.plugins.module_utils.train_check import node_error, rank0_result

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "train_check"


def results(name):
    return json.loads((FIXTURES / name).read_text())


def test_three_nodes_agree():
    verdict = train_check(results("direct_ok_3nodes.json"))
    assert verdict["ok"] is True, verdict["message"]
    assert verdict["world_size"] == 3
    assert verdict["message"] == "3 ranks agree (sum 6.0, expected 6)"
    assert verdict["table"][0] == "train_check world_size=3 backend=gloo sum=6 expected=6"
    assert [line.split()[2] for line in verdict["table"][1:]] == ["host=trn1", "host=trn2", "host=trn3"]
    assert (verdict["broken"], verdict["waited"]) == ([], [])


def test_broken_torch_names_that_node_first():
    verdict = train_check(results("direct_broken_trn2.json"))
    assert verdict["ok"] is False
    assert verdict["broken"] == ["trn2"]
    assert verdict["waited"] == ["trn1", "trn3"]
    assert verdict["message"].startswith("trn2: rc 1: AttributeError: module 'torch' has no attribute '_C'; ")
    assert "trn1, trn3 only waited" in verdict["message"]
    assert verdict["table"] == []


def test_version_mismatch_names_the_rank_and_host():
    verdict = train_check(results("direct_mismatch_trn3.json"))
    assert verdict["ok"] is False
    assert verdict["broken"] == []
    assert verdict["message"] == "rank 2 (trn3): torch 2.1.3+cu121 (rank 0: 2.1.2+cu121) differs from rank 0"
    assert verdict["world_size"] == 3


def test_a_node_without_result_is_broken():
    found = results("direct_ok_3nodes.json")
    found["trn4"] = {}
    verdict = train_check(found)
    assert verdict["ok"] is False
    assert verdict["broken"] == ["trn4"]
    assert verdict["message"].startswith("trn4: no result")


def test_only_timeouts_say_that_no_node_failed_on_its_own():
    broken = results("direct_broken_trn2.json")
    del broken["trn2"]
    verdict = train_check(broken)
    assert verdict["ok"] is False and verdict["broken"] == []
    assert verdict["message"].startswith("no node failed on its own, trn1, trn3 gave up in the rendezvous")


def test_node_error_is_the_last_exception_line():
    assert node_error(results("direct_broken_trn2.json")["trn2"]["stderr"]) == (
        "AttributeError: module 'torch' has no attribute '_C'")
    assert rank0_result(results("direct_broken_trn2.json")["trn1"]["stdout"]) is None


def test_srun_output_split_per_node_and_read():
    srun = results("srun_ok_3nodes.json")
    split = train_check_srun(srun["stdout"], srun["stderr"])
    assert sorted(split) == ["trn1", "trn2", "trn3"]
    assert [split[node]["rc"] for node in sorted(split)] == [0, 0, 0]
    verdict = train_check(split)
    assert verdict["ok"] is True and verdict["world_size"] == 3, verdict["message"]
    assert verdict["table"][0] == "train_check world_size=3 backend=gloo sum=6 expected=6"


def test_srun_broken_torch_names_that_node_first():
    srun = results("srun_broken_trn2.json")
    verdict = train_check(train_check_srun(srun["stdout"], srun["stderr"]))
    assert verdict["broken"] == ["trn2"] and verdict["waited"] == ["trn1", "trn3"]
    assert verdict["message"].startswith("trn2: rc 1: AttributeError: module 'torch' has no attribute '_C'; ")


def test_srun_task_killed_before_its_exit_line():
    split = train_check_srun("0: train_check_exit trn1 0\n1: some output", "1: RendezvousTimeoutError")
    assert split["task 1"] == {"rc": None, "stdout": "some output", "stderr": "RendezvousTimeoutError"}


def test_job_that_did_not_end_fails_even_with_a_good_table():
    # The first version of the script (no barrier before leaving): rank 0
    # printed its table, then the agents hung until the deadline killed them.
    verdict = train_check(results("direct_ok_then_hung.json"))
    assert verdict["ok"] is False
    assert verdict["world_size"] == 3
    assert verdict["message"] == (
        "rank 0 printed its table, but torchrun did not end on trn1, trn2, trn3 (killed at the deadline (rc 124))")
