"""Tests for lockstep_nccl over real NCCL headers, logs and nccl-tests outputs.

Every fixture is a real output of a real machine; tests/fixtures/nccl/SOURCES.md
says where each comes from. Truncated inputs are made here, at run time, by
cutting those real outputs.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.nccl import (
    version_code,
    parse_all_reduce_perf,
    parse_nccl_header,
    parse_nccl_log_version,
)

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"

NCCL = FIXTURES / "nccl"
HEADER = "nccl_2.18.1_nvidia-nccl-cu12.h"
OCI_1NODE = "all_reduce_perf_a100_1node_8gpu_oci.txt"
OCI_2NODE = "all_reduce_perf_a100_2node_16gpu_oci.txt"
EFA_2021 = "all_reduce_perf_p4d_2node_16gpu_efa_2021.txt"
ISSUE_331 = "sendrecv_perf_a100_2gpu_nccl_info_issue331.txt"
P4DE_EXCERPT = "all_reduce_perf_p4de_2node_excerpt_no_summary.txt"
COMPLETE_RUNS = (OCI_1NODE, OCI_2NODE, EFA_2021, ISSUE_331)


def read(name):
    return (NCCL / name).read_text()


def row_of(result, size):
    matches = [row for row in result["rows"] if row["size"] == size]
    assert len(matches) == 1
    return matches[0]


# --------------------------------------------------------------------------
# nccl.h
# --------------------------------------------------------------------------


def test_header_from_nvidia_wheel():
    result = parse_nccl_header(read(HEADER), source=HEADER)
    assert result == {
        "version": "2.18.1",
        "major": 2,
        "minor": 18,
        "patch": 1,
        "suffix": "",
        "version_code": 21801,
    }


def test_header_version_code_matches_nccl_version_rule():
    result = parse_nccl_header(read(HEADER))
    assert version_code(result["major"], result["minor"], result["patch"]) == 21801
    # Before 2.9 the code had one digit less (NCCL_VERSION in nccl.h).
    assert version_code(2, 8, 3) == 2803


def test_header_without_version_code_computes_it():
    """A header without NCCL_VERSION_CODE (the real one's line removed) gets the code by NCCL's rule; this
    once raised UnboundLocalError (the result's name shadowed the function), so verify read the node as
    unreadable."""
    text = re.sub(r"^#define NCCL_VERSION_CODE.*$", "", read(HEADER), flags=re.MULTILINE)
    assert "#define NCCL_VERSION_CODE" not in text
    result = parse_nccl_header(text)
    assert (result["version"], result["version_code"]) == ("2.18.1", 21801)


def test_header_cut_before_patch_is_rejected():
    text = read(HEADER)
    cut = text[: text.index("#define NCCL_PATCH")]
    with pytest.raises(ParseError, match="NCCL_PATCH"):
        parse_nccl_header(cut, source="nccl.h")


@pytest.mark.parametrize("text", ["", "   \n\t\n", None])
def test_header_empty_input(text):
    with pytest.raises(ParseError, match="input"):
        parse_nccl_header(text)


def test_header_rejects_other_text():
    with pytest.raises(ParseError, match="NCCL_MAJOR"):
        parse_nccl_header(read(OCI_1NODE))


def test_parse_error_names_the_source():
    with pytest.raises(ParseError) as info:
        parse_nccl_header("", source="node1:/usr/include/nccl.h")
    assert str(info.value).startswith("node1:/usr/include/nccl.h: ")
    assert info.value.source == "node1:/usr/include/nccl.h"


# --------------------------------------------------------------------------
# NCCL debug log
# --------------------------------------------------------------------------


def test_log_version_nccl_info_line():
    # "lrdn2296:4063850:4063850 [1] NCCL INFO NCCL version 2.22.3+cuda12.2"
    assert parse_nccl_log_version(read(ISSUE_331)) == {"version": "2.22.3", "cuda": "12.2"}


def test_log_version_bare_line_with_mpirun_prefix():
    # "[1,0]<stdout>:NCCL version 2.8.3+cuda11.2" (NCCL 2.8 prints no "NCCL INFO")
    assert parse_nccl_log_version(read(EFA_2021)) == {"version": "2.8.3", "cuda": "11.2"}


def test_log_without_version_line():
    with pytest.raises(ParseError, match="NCCL_DEBUG"):
        parse_nccl_log_version(read(OCI_1NODE), source=OCI_1NODE)


def test_log_with_two_versions_is_rejected():
    both = read(EFA_2021) + read(ISSUE_331)
    with pytest.raises(ParseError, match=r"2\.8\.3\+cuda11\.2, 2\.22\.3\+cuda12\.2"):
        parse_nccl_log_version(both)


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_log_empty_input(text):
    with pytest.raises(ParseError, match="empty input"):
        parse_nccl_log_version(text)


# --------------------------------------------------------------------------
# all_reduce_perf: values read from the fixtures
# --------------------------------------------------------------------------


def test_single_node_8gpu_current_format():
    result = parse_all_reduce_perf(read(OCI_1NODE), source=OCI_1NODE)
    assert len(result["rows"]) == 28
    assert result["avg_busbw"] == pytest.approx(81.112)
    assert result["out_of_bounds"] == 0
    assert result["nranks"] == 8
    assert result["nthreads"] == 1 and result["ngpus"] == 8
    assert result["hosts"] == ["inst-ks8ls-comp"]
    assert result["check_column"] == "#wrong"
    assert result["nccl_version"] is None
    assert [d["rank"] for d in result["devices"]] == list(range(8))
    assert {d["pid"] for d in result["devices"]} == {944}
    assert result["devices"][7] == {
        "rank": 7,
        "group": 0,
        "pid": 944,
        "host": "inst-ks8ls-comp",
        "device": 7,
        "bus_id": "0xda",
        "gpu": "NVIDIA A100-SXM4-40GB",
    }
    first = result["rows"][0]
    assert (first["size"], first["count"], first["type"]) == (64, 16, "float")
    assert (first["redop"], first["root"]) == ("sum", -1)
    row = row_of(result, 1073741824)
    assert row["out_of_place"] == {
        "time_us": pytest.approx(8166.8),
        "algbw": pytest.approx(131.48),
        "busbw": pytest.approx(230.08),
        "wrong": 0,
        "error": None,
    }
    assert row["in_place"]["time_us"] == pytest.approx(8165.2)
    assert row["in_place"]["busbw"] == pytest.approx(230.13)
    assert result["rows"][-1]["in_place"]["busbw"] == pytest.approx(235.21)


def test_two_nodes_16gpu_current_format():
    result = parse_all_reduce_perf(read(OCI_2NODE), source=OCI_2NODE)
    assert len(result["rows"]) == 28
    assert result["avg_busbw"] == pytest.approx(24.2272)
    assert result["nranks"] == 16
    assert result["hosts"] == ["inst-ks8ls-comp", "inst-6ejzf-comp"]
    per_host = [sum(d["host"] == h for d in result["devices"]) for h in result["hosts"]]
    assert per_host == [8, 8]
    assert result["devices"][8]["host"] == "inst-6ejzf-comp"
    assert result["devices"][8]["device"] == 0
    assert result["devices"][8]["pid"] == 1376
    # the slow 64 MiB row of this run: out-of-place 20.77, in-place 33.92 GB/s
    row = row_of(result, 67108864)
    assert row["out_of_place"]["busbw"] == pytest.approx(20.77)
    assert row["in_place"]["busbw"] == pytest.approx(33.92)


def test_two_nodes_old_format_with_mpirun_prefix():
    result = parse_all_reduce_perf(read(EFA_2021), source=EFA_2021)
    assert len(result["rows"]) == 28
    assert result["check_column"] == "error"
    assert result["avg_busbw"] == pytest.approx(7.80081)
    assert result["out_of_bounds"] == 0
    assert result["nranks"] == 16
    assert result["hosts"] == ["nccl-tests-efa-worker-0", "nccl-tests-efa-worker-1"]
    assert result["nccl_version"] == "2.8.3"
    assert all(d["group"] is None for d in result["devices"])
    assert result["devices"][0]["bus_id"] == "0x10"
    assert result["devices"][0]["gpu"] == "A100-SXM4-40GB"
    first = result["rows"][0]
    assert (first["size"], first["redop"], first["root"]) == (8, "sum", None)
    assert first["out_of_place"]["error"] == pytest.approx(2e-07)
    assert first["out_of_place"]["wrong"] is None
    assert first["in_place"]["error"] == pytest.approx(1e-07)
    last = result["rows"][-1]
    assert last["size"] == 1073741824
    assert last["out_of_place"]["busbw"] == pytest.approx(32.71)
    assert last["in_place"]["busbw"] == pytest.approx(32.84)


def test_na_check_column_and_interleaved_nccl_info():
    # sendrecv_perf shares the table format; its in-place check prints N/A.
    result = parse_all_reduce_perf(read(ISSUE_331), source=ISSUE_331)
    assert len(result["rows"]) == 29
    assert result["avg_busbw"] == pytest.approx(24.3607)
    assert result["nranks"] == 2
    assert result["nthreads"] == 2
    assert result["nccl_version"] == "2.22.3"
    assert result["devices"][1]["bus_id"] == "0000:56:00"
    assert result["devices"][1]["gpu"] == "NVIDIA A100-SXM-64GB"
    assert all(r["in_place"]["wrong"] is None for r in result["rows"])
    assert all(r["out_of_place"]["wrong"] == 0 for r in result["rows"])
    assert row_of(result, 268435456)["in_place"]["busbw"] == pytest.approx(73.83)


@pytest.mark.parametrize("name", COMPLETE_RUNS)
def test_rows_agree_with_their_own_times(name):
    """busbw = size / time * factor: checks the parser's columns line up."""
    result = parse_all_reduce_perf(read(name))
    nranks = result["nranks"]
    factor = 1.0 if name == ISSUE_331 else 2.0 * (nranks - 1) / nranks
    for row in result["rows"]:
        assert row["size"] == row["count"] * 4  # float
        for side in ("out_of_place", "in_place"):
            values = row[side]
            expected = row["size"] / values["time_us"] / 1e3 * factor
            assert values["busbw"] == pytest.approx(expected, rel=0.005, abs=0.006)


@pytest.mark.parametrize("name", COMPLETE_RUNS)
def test_avg_busbw_is_the_mean_of_the_table(name):
    result = parse_all_reduce_perf(read(name))
    values = [r[side]["busbw"] for r in result["rows"] for side in ("out_of_place", "in_place")]
    assert statistics.mean(values) == pytest.approx(result["avg_busbw"], abs=0.01)


# --------------------------------------------------------------------------
# all_reduce_perf: incomplete outputs
# --------------------------------------------------------------------------


def test_real_excerpt_without_summary_is_rejected():
    # AWS's README shows the table of a 2-node run without its summary lines.
    with pytest.raises(ParseError, match=r"Avg bus bandwidth.*size 2147483648.*truncated"):
        parse_all_reduce_perf(read(P4DE_EXCERPT), source=P4DE_EXCERPT)


def _lines(name):
    return read(name).splitlines(keepends=True)


@pytest.mark.parametrize("name", COMPLETE_RUNS)
def test_cut_before_summary(name):
    text = read(name)
    cut = text[: text.index("# Out of bounds values")]
    with pytest.raises(ParseError, match="no '# Avg bus bandwidth' line"):
        parse_all_reduce_perf(cut, source=name)


@pytest.mark.parametrize("name", COMPLETE_RUNS)
def test_cut_between_oob_and_avg(name):
    text = read(name)
    cut = text[: text.index("# Avg bus bandwidth")]
    with pytest.raises(ParseError, match="truncated"):
        parse_all_reduce_perf(cut)


@pytest.mark.parametrize("name", COMPLETE_RUNS)
def test_cut_mid_row(name):
    lines = _lines(name)
    last = max(i for i, line in enumerate(lines) if " sum " in line and "NCCL" not in line)
    row = lines[last]
    cut = "".join(lines[:last]) + row[: len(row) * 2 // 3]
    with pytest.raises(ParseError, match=r"fields, expected \d+ \(table cut mid-row"):
        parse_all_reduce_perf(cut, source=name)


@pytest.mark.parametrize("name", COMPLETE_RUNS)
def test_cut_after_table_header(name):
    text = read(name)
    end = text.index("(elements)")
    cut = text[: text.index("\n", end) + 1]
    with pytest.raises(ParseError, match="no rows"):
        parse_all_reduce_perf(cut)


@pytest.mark.parametrize("name", COMPLETE_RUNS)
def test_cut_before_table_header(name):
    text = read(name)
    cut = text[: text.index("out-of-place")]
    with pytest.raises(ParseError, match="no nccl-tests results table"):
        parse_all_reduce_perf(cut)


def test_two_runs_in_one_text_are_rejected():
    with pytest.raises(ParseError, match="second results table"):
        parse_all_reduce_perf(read(OCI_1NODE) + read(OCI_2NODE))


@pytest.mark.parametrize("text", ["", " \n", None])
def test_all_reduce_empty_input(text):
    with pytest.raises(ParseError, match="input"):
        parse_all_reduce_perf(text)


def test_all_reduce_rejects_a_header_file():
    with pytest.raises(ParseError, match="no nccl-tests results table"):
        parse_all_reduce_perf(read(HEADER), source=HEADER)
