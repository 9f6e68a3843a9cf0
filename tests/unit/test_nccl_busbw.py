"""Bus bandwidth thresholds on real all_reduce_perf outputs (tests/fixtures/nccl/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.nccl import parse_all_reduce_perf
from ansible_collections.lockstep.gpu.plugins.plugin_utils.nccl_health import check_bus_bandwidth
from ansible_collections.lockstep.gpu.plugins.filter.nccl import nccl_busbw

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"

NCCL = FIXTURES / "nccl"
OCI_1NODE = "all_reduce_perf_a100_1node_8gpu_oci.txt"      # avg 81.112, 8x A100-SXM4-40GB
OCI_2NODE = "all_reduce_perf_a100_2node_16gpu_oci.txt"      # avg 24.2272, 2x8 A100
EFA_2021 = "all_reduce_perf_p4d_2node_16gpu_efa_2021.txt"   # avg 7.80081, old format
P4DE_EXCERPT = "all_reduce_perf_p4de_2node_excerpt_no_summary.txt"

# The inventory's example thresholds (inventories/example/group_vars/all/nccl.yml).
THRESHOLDS = [
    {"gpu": "H100", "nodes": 1, "gpus_per_node": 8, "min_busbw": 460},
    {"gpu": "A100", "nodes": 1, "gpus_per_node": 8, "min_busbw": 228},
    {"gpu": "A100", "nodes": 2, "min_busbw": 20},
]


def parsed(name):
    return parse_all_reduce_perf((NCCL / name).read_text(), source=name)


def test_one_a100_node_below_its_threshold():
    result = check_bus_bandwidth(parsed(OCI_1NODE), THRESHOLDS)
    assert result["ok"] is False
    assert result["gpu"] == "NVIDIA A100-SXM4-40GB"
    assert (result["nodes"], result["gpus_per_node"], result["nranks"]) == (1, 8, 8)
    assert result["min_busbw"] == 228
    assert result["message"] == ("avg bus bandwidth 81.11 GB/s is below the 228.00 GB/s expected of "
                                 "1 node(s) x 8 GPU(s) NVIDIA A100-SXM4-40GB")


def test_one_a100_node_above_a_lower_threshold():
    result = check_bus_bandwidth(parsed(OCI_1NODE), [{"gpu": "a100", "min_busbw": 80}])
    assert result["ok"] is True
    assert result["avg_busbw"] == pytest.approx(81.112)
    assert result["message"].startswith("avg bus bandwidth 81.11 GB/s >= 80.00 GB/s")


def test_two_node_run_picks_the_two_node_threshold():
    result = check_bus_bandwidth(parsed(OCI_2NODE), THRESHOLDS)
    assert (result["nodes"], result["gpus_per_node"]) == (2, 8)
    assert result["min_busbw"] == 20
    assert result["ok"] is True


def test_old_format_two_nodes_below_threshold():
    result = check_bus_bandwidth(parsed(EFA_2021), THRESHOLDS, source=EFA_2021)
    assert result["gpu"] == "A100-SXM4-40GB"
    assert result["wrong"] == 0  # old format: an "error" column, no #wrong count
    assert result["ok"] is False
    assert "7.80 GB/s is below the 20.00 GB/s expected of 2 node(s) x 8 GPU(s)" in result["message"]


def test_no_matching_threshold_is_undecided():
    result = check_bus_bandwidth(parsed(OCI_1NODE), [THRESHOLDS[0]])
    assert result["ok"] is None
    assert result["message"] == ("no threshold matches 1 node(s) x 8 GPU(s) NVIDIA A100-SXM4-40GB "
                                 "(avg bus bandwidth 81.11 GB/s)")


def test_first_matching_entry_wins():
    result = check_bus_bandwidth(parsed(OCI_1NODE), [{"gpu": "A100", "min_busbw": 50}, THRESHOLDS[1]])
    assert result["min_busbw"] == 50 and result["ok"] is True


def test_wrong_values_fail_even_above_threshold():
    result = parsed(OCI_1NODE)
    result["rows"][3]["in_place"]["wrong"] = 2
    checked = check_bus_bandwidth(result, [{"gpu": "A100", "min_busbw": 1}])
    assert checked["ok"] is False
    assert checked["message"].startswith("2 wrong value(s) and 0 out-of-bounds value(s)")


def test_mixed_models_are_rejected():
    result = parsed(OCI_1NODE)
    result["devices"][0]["gpu"] = "NVIDIA H100 80GB HBM3"
    with pytest.raises(ParseError, match="mixes GPU models"):
        check_bus_bandwidth(result, THRESHOLDS)


def test_filter_parses_and_checks():
    result = nccl_busbw((NCCL / OCI_1NODE).read_text(), THRESHOLDS, OCI_1NODE)
    assert result["ok"] is False and result["min_busbw"] == 228


def test_filter_rejects_a_truncated_output_clearly():
    with pytest.raises(AnsibleFilterError, match=r"no '# Avg bus bandwidth' line.*truncated"):
        nccl_busbw((NCCL / P4DE_EXCERPT).read_text(), THRESHOLDS, P4DE_EXCERPT)
    text = (NCCL / OCI_2NODE).read_text()
    with pytest.raises(AnsibleFilterError, match=r"^all_reduce_perf_a100_2node_16gpu_oci.txt: .*cut mid-row"):
        nccl_busbw(text[: text.index("# Out of bounds") - 40], THRESHOLDS, OCI_2NODE)
