# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for lockstep_nvidia over real outputs of real machines.

Every fixture under tests/fixtures/nvidia is a verbatim copy of output found
in a public source, or produced here by running NVIDIA's own binaries from
PyPI wheels; tests/fixtures/nvidia/SOURCES.md says where each came from.
The expected values below were read off the fixture files by hand.

Inputs built at run time are only used for the error paths: truncations of
the real files, empty text, and documents that are not NVIDIA output.

Not covered by a real fixture: nvidia-smi -q -x from an R610+ driver (no
public copy was found), so the parser's preference for <kmd_version> /
<cuda_umd_version> tags is untested; the R610+ label change is tested on the
real plain-text and -q outputs instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.nvidia import (
    parse_cuda_version_json,
    parse_cuda_version_txt,
    parse_nvcc_version,
    parse_nvidia_smi_text_driver,
    parse_nvidia_smi_xml,
    parse_proc_driver_version,
    parse_ptxas_version,
)

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"

NV = FIXTURES / "nvidia"

P100 = "nvidia-smi-q-x_tesla-p100_510.47.03.xml"
A100_MIG = "nvidia-smi-q-x_a100-sxm4-80gb-mig_535.54.03.xml"
K80 = "nvidia-smi-q-x_4x-tesla-k80_430.26.xml"
GTX1070 = "nvidia-smi-q-x_gtx-1070_384.66.xml"
XML_FIXTURES = [P100, A100_MIG, K80, GTX1070]


def read(name: str) -> str:
    return (NV / name).read_text(encoding="utf-8")


def xml(name: str) -> dict:
    return parse_nvidia_smi_xml(read(name), source=name)


# ---------------------------------------------------------------------------
# nvidia-smi -q -x
# ---------------------------------------------------------------------------


def test_xml_tesla_p100_driver_510():
    facts = xml(P100)
    assert facts["driver_version"] == "510.47.03"
    assert facts["cuda_version"] == "11.6"
    assert facts["gpu_count"] == 1
    assert facts["attached_gpus"] == 1
    assert facts["warnings"] == []
    assert facts["fabric_manager"] is None
    gpu = facts["gpus"][0]
    assert gpu["index"] == 0
    assert gpu["name"] == "Tesla P100-PCIE-16GB"
    assert gpu["brand"] == "Tesla"
    assert gpu["architecture"] == "Pascal"
    assert gpu["uuid"] == "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e"
    assert gpu["serial"] == "0324217145110"
    assert gpu["pci_bus_id"] == "00000000:00:04.0"
    assert gpu["memory_total_mib"] == 16384
    assert gpu["persistence_mode"] == "Disabled"
    assert gpu["ecc_mode"] == "Enabled"
    assert gpu["mig_mode"] is None  # <current_mig>N/A</current_mig>
    assert gpu["mig_mode_pending"] is None
    assert gpu["mig_devices"] == 0  # <mig_devices>None</mig_devices>
    assert gpu["vbios_version"] == "86.00.52.00.02"
    assert gpu["gsp_firmware_version"] is None  # N/A
    assert gpu["compute_mode"] == "Default"
    assert gpu["minor_number"] == 0


def test_xml_a100_mig_enabled_driver_535():
    facts = xml(A100_MIG)
    assert facts["driver_version"] == "535.54.03"
    assert facts["cuda_version"] == "12.2"
    # The published output lists one <gpu> of the four the header counts.
    assert facts["gpu_count"] == 1
    assert facts["attached_gpus"] == 4
    assert len(facts["warnings"]) == 1
    assert "attached_gpus says 4" in facts["warnings"][0]
    gpu = facts["gpus"][0]
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpu["brand"] == "NVIDIA"
    assert gpu["architecture"] == "Ampere"
    assert gpu["uuid"] == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert gpu["serial"] == "1650522003820"
    assert gpu["pci_bus_id"] == "00000000:01:00.0"
    assert gpu["minor_number"] == 1
    assert gpu["memory_total_mib"] == 81920
    assert gpu["persistence_mode"] == "Disabled"
    assert gpu["ecc_mode"] == "Enabled"
    assert gpu["mig_mode"] == "Enabled"
    assert gpu["mig_mode_pending"] == "Enabled"
    assert gpu["mig_devices"] == 4
    assert [m["gpu_instance_id"] for m in gpu["mig_device_details"]] == [3, 4, 5, 6]
    assert [m["index"] for m in gpu["mig_device_details"]] == [0, 1, 2, 3]
    assert {m["compute_instance_id"] for m in gpu["mig_device_details"]} == {0}
    assert {m["memory_total_mib"] for m in gpu["mig_device_details"]} == {19968}
    assert gpu["vbios_version"] == "92.00.36.00.02"
    assert gpu["gsp_firmware_version"] == "535.54.03"
    # <fabric><state>N/A</state>...: no fabric manager on this board.
    assert gpu["fabric_state"] is None
    assert facts["fabric_manager"] is None


def test_xml_four_tesla_k80_old_driver_no_cuda():
    facts = xml(K80)
    assert facts["driver_version"] == "430.26"
    assert facts["cuda_version"] is None  # <cuda_version>Not Found</cuda_version>
    assert facts["gpu_count"] == 4
    assert facts["attached_gpus"] == 4
    assert facts["warnings"] == []
    gpus = facts["gpus"]
    assert [g["index"] for g in gpus] == [0, 1, 2, 3]
    assert {g["name"] for g in gpus} == {"Tesla K80"}
    assert [g["uuid"] for g in gpus] == [
        "GPU-c3b26f7a-8dcb-619c-fa1b-8029265a4db0",
        "GPU-b01b80eb-0f18-1df0-cf88-0725bd90f1e1",
        "GPU-30bc2701-3bc2-5f35-0ebd-9867a077e138",
        "GPU-3341aba2-f01d-2c1f-7dd4-e389779faec2",
    ]
    # Listed out of minor-number order (Azure VM, GPUs in separate PCI domains).
    assert [g["minor_number"] for g in gpus] == [1, 2, 3, 0]
    assert [g["pci_bus_id"] for g in gpus] == [
        "00001580:00:00.0",
        "00002DF7:00:00.0",
        "00004968:00:00.0",
        "0000F8D6:00:00.0",
    ]
    # A K80 board carries two GPUs that share one serial number.
    assert [g["serial"] for g in gpus] == [
        "0322416026235",
        "0322116081614",
        "0322116081614",
        "0322416026235",
    ]
    assert [g["vbios_version"] for g in gpus] == [
        "80.21.1F.00.05",
        "80.21.1F.00.05",
        "80.21.1F.00.06",
        "80.21.1F.00.06",
    ]
    assert {g["memory_total_mib"] for g in gpus} == {11441}
    assert {g["ecc_mode"] for g in gpus} == {"Enabled"}
    assert {g["persistence_mode"] for g in gpus} == {"Disabled"}
    # Driver 430 predates MIG and <product_architecture>.
    assert {g["mig_mode"] for g in gpus} == {None}
    assert {g["mig_devices"] for g in gpus} == {0}
    assert {g["architecture"] for g in gpus} == {None}


def test_xml_geforce_driver_384_lists_fewer_gpus_than_attached():
    facts = xml(GTX1070)
    assert facts["driver_version"] == "384.66"
    assert facts["cuda_version"] is None  # no <cuda_version> before R410
    assert facts["attached_gpus"] == 6
    assert facts["gpu_count"] == 2
    assert "lists 2 <gpu>" in facts["warnings"][0]
    first, second = facts["gpus"]
    assert first["name"] == second["name"] == "GeForce GTX 1070"
    assert first["uuid"] == "GPU-e511a7b2-f9d5-ba47-9b98-853732ca6c1b"
    assert second["uuid"] == "GPU-28daffaf-8abe-aaf8-c298-4bd13aecb5e6"
    assert first["pci_bus_id"] == "00000000:01:00.0"
    assert second["pci_bus_id"] == "00000000:03:00.0"
    assert first["memory_total_mib"] == 8112
    assert second["memory_total_mib"] == 8114
    assert first["serial"] is None  # N/A on GeForce
    assert first["ecc_mode"] is None  # N/A on GeForce
    assert first["persistence_mode"] == "Disabled"
    assert first["mig_mode"] is None  # no <mig_mode> element at all
    assert first["vbios_version"] == "86.04.50.00.AB"


@pytest.mark.parametrize("name", XML_FIXTURES)
def test_xml_accepts_bytes_and_leading_whitespace(name):
    raw = (NV / name).read_bytes()
    assert parse_nvidia_smi_xml(b"\n" + raw, source=name) == xml(name)


@pytest.mark.parametrize("name", XML_FIXTURES)
def test_xml_truncated_raises_naming_source(name):
    text = read(name)
    with pytest.raises(ParseError) as info:
        parse_nvidia_smi_xml(text[: len(text) // 2], source=name)
    assert info.value.source == name
    assert str(info.value).startswith(name + ": ")
    assert "malformed or truncated" in str(info.value)


@pytest.mark.parametrize("name", XML_FIXTURES)
def test_xml_cut_after_first_gpu_raises(name):
    text = read(name)
    cut = text.index("</gpu>") + len("</gpu>")
    with pytest.raises(ParseError, match="truncated"):
        parse_nvidia_smi_xml(text[:cut], source=name)


@pytest.mark.parametrize("empty", ["", "   \n\t", b""])
def test_xml_empty_raises(empty):
    with pytest.raises(ParseError, match="empty input") as info:
        parse_nvidia_smi_xml(empty, source="nvidia-smi -q -x")
    assert info.value.source == "nvidia-smi -q -x"


def test_xml_empty_without_source():
    with pytest.raises(ParseError) as info:
        parse_nvidia_smi_xml("")
    assert info.value.source is None
    assert str(info.value).startswith("empty input")


def test_xml_other_xml_document_raises():
    with pytest.raises(ParseError, match=r"root element is <project>"):
        parse_nvidia_smi_xml('<?xml version="1.0"?><project name="x"/>', source="x.xml")


def test_xml_json_input_raises():
    with pytest.raises(ParseError, match="malformed"):
        parse_nvidia_smi_xml(read("cuda-version-json_12.8.2_windows.json"), source="v.json")


def test_xml_plain_text_output_raises():
    with pytest.raises(ParseError):
        parse_nvidia_smi_xml(read("nvidia-smi_geforce_470.63.01.txt"), source="smi")


def test_xml_entity_declarations_refused():
    doc = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "y">]><nvidia_smi_log>&e;</nvidia_smi_log>'
    with pytest.raises(ParseError, match="entities"):
        parse_nvidia_smi_xml(doc, source="evil")


def test_xml_without_driver_version_raises():
    text = read(P100)
    stripped = re.sub(r"\s*<driver_version>[^<]*</driver_version>", "", text, count=1)
    with pytest.raises(ParseError, match="driver_version"):
        parse_nvidia_smi_xml(stripped, source=P100)


def test_xml_gpu_without_uuid_raises():
    text = read(P100)
    stripped = re.sub(r"\s*<uuid>[^<]*</uuid>", "", text, count=1)
    with pytest.raises(ParseError, match=r"GPU 0 .* has no <uuid>"):
        parse_nvidia_smi_xml(stripped, source=P100)


# ---------------------------------------------------------------------------
# nvidia-smi / nvidia-smi -q text header
# ---------------------------------------------------------------------------


def test_text_r610_table_header_kmd_and_cuda_umd():
    facts = parse_nvidia_smi_text_driver(read("nvidia-smi_2x-b200_610.43.02_head.txt"))
    assert facts == {
        "driver_version": "610.43.02",
        "cuda_version": "13.3",
        "nvidia_smi_version": "610.43.02",
        "driver_label": "KMD Version",
    }


def test_text_r610_query_prefers_kmd_and_drops_deprecation_notes():
    facts = parse_nvidia_smi_text_driver(read("nvidia-smi-q_610.47_head.txt"))
    assert facts["driver_version"] == "610.47"
    assert facts["cuda_version"] == "13.3"
    assert facts["driver_label"] == "KMD Version"
    assert facts["nvidia_smi_version"] is None


def test_text_table_header_driver_470():
    facts = parse_nvidia_smi_text_driver(read("nvidia-smi_geforce_470.63.01.txt"))
    assert facts == {
        "driver_version": "470.63.01",
        "cuda_version": "11.4",
        "nvidia_smi_version": "470.63.01",
        "driver_label": "Driver Version",
    }


def test_text_query_driver_450():
    facts = parse_nvidia_smi_text_driver(read("nvidia-smi-q_gtx-780_450.66_head.txt"))
    assert facts["driver_version"] == "450.66"
    assert facts["cuda_version"] == "11.0"
    assert facts["driver_label"] == "Driver Version"


def test_text_query_driver_375_has_no_cuda_line():
    facts = parse_nvidia_smi_text_driver(read("nvidia-smi-q_quadro-m1000m_375.82_head.txt"))
    assert facts["driver_version"] == "375.82"
    assert facts["cuda_version"] is None


def test_text_failed_nvidia_smi_raises():
    message = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    with pytest.raises(ParseError, match="no 'Driver Version' or 'KMD Version'") as info:
        parse_nvidia_smi_text_driver(message, source="nvidia-smi")
    assert info.value.source == "nvidia-smi"


@pytest.mark.parametrize("empty", ["", "\n\n"])
def test_text_empty_raises(empty):
    with pytest.raises(ParseError, match="empty input"):
        parse_nvidia_smi_text_driver(empty, source="nvidia-smi")


def test_text_given_proc_version_raises():
    with pytest.raises(ParseError):
        parse_nvidia_smi_text_driver(read("proc-driver-nvidia-version_384.98.txt"))


# ---------------------------------------------------------------------------
# /proc/driver/nvidia/version
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, version, module, is_open, arch, gcc",
    [
        (
            "proc-driver-nvidia-version_384.98.txt",
            "384.98",
            "NVIDIA UNIX x86_64 Kernel Module",
            False,
            "x86_64",
            "7.2.0",
        ),
        (
            "proc-driver-nvidia-version_580.173.02.txt",
            "580.173.02",
            "NVIDIA UNIX x86_64 Kernel Module",
            False,
            "x86_64",
            "14.2.0",
        ),
        (
            "proc-driver-nvidia-version_open_565.57.01.txt",
            "565.57.01",
            "NVIDIA UNIX Open Kernel Module for x86_64",
            True,
            "x86_64",
            "13.3.0",
        ),
        (
            "proc-driver-nvidia-version_open_525.60.11.txt",
            "525.60.11",
            "NVIDIA UNIX Open Kernel Module for x86_64",
            True,
            "x86_64",
            "12.2.0",
        ),
        (
            "proc-driver-nvidia-version_jetson-aarch64_35.3.1.txt",
            "35.3.1",
            "NVIDIA UNIX Open Kernel Module for aarch64",
            True,
            "aarch64",
            "9.3.0",
        ),
    ],
)
def test_proc_version(name, version, module, is_open, arch, gcc):
    facts = parse_proc_driver_version(read(name), source=name)
    assert facts["driver_version"] == version
    assert facts["kernel_module"] == module
    assert facts["open"] is is_open
    assert facts["arch"] == arch
    assert facts["gcc"] == gcc


def test_proc_version_gcc_full_text_without_trailing_space():
    facts = parse_proc_driver_version(read("proc-driver-nvidia-version_384.98.txt"))
    assert facts["gcc_full"] == "gcc version 7.2.0 (Ubuntu 7.2.0-8ubuntu3)"


def test_proc_version_without_gcc_line():
    first_line = read("proc-driver-nvidia-version_open_565.57.01.txt").splitlines()[0]
    facts = parse_proc_driver_version(first_line)
    assert facts["driver_version"] == "565.57.01"
    assert facts["gcc"] is None
    assert facts["gcc_full"] is None


def test_proc_version_rejects_other_text():
    with pytest.raises(ParseError, match="NVRM version") as info:
        parse_proc_driver_version(read("nvidia-smi_geforce_470.63.01.txt"), source="/proc/x")
    assert info.value.source == "/proc/x"
    with pytest.raises(ParseError, match="empty input"):
        parse_proc_driver_version("", source="/proc/driver/nvidia/version")


# ---------------------------------------------------------------------------
# nvcc --version and ptxas --version
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, release, version, build",
    [
        ("nvcc-version_10.1.243.txt", "10.1", "10.1.243", None),
        ("nvcc-version_11.1.105.txt", "11.1", "11.1.105", "cuda_11.1.TC455_06.29190527_0"),
        ("nvcc-version_11.5.119.txt", "11.5", "11.5.119", "cuda_11.5.r11.5/compiler.30672275_0"),
        ("nvcc-version_12.5.82.txt", "12.5", "12.5.82", "cuda_12.5.r12.5/compiler.34385749_0"),
        ("nvcc-version_13.5.37.txt", "13.5", "13.5.37", "cuda_13.5.r13.5/compiler.39125733_0"),
    ],
)
def test_nvcc_version(name, release, version, build):
    facts = parse_nvcc_version(read(name), source=name)
    assert facts["release"] == release
    assert facts["version"] == version
    assert facts["build"] == build


def test_nvcc_built_on():
    facts = parse_nvcc_version(read("nvcc-version_12.5.82.txt"))
    assert facts["built_on"] == "Thu_Jun__6_02:18:23_PDT_2024"


@pytest.mark.parametrize(
    "name, release, version, built_on",
    [
        ("ptxas-version_12.1.105.txt", "12.1", "12.1.105", "Mon_Apr__3_17:13:45_PDT_2023"),
        ("ptxas-version_12.6.85.txt", "12.6", "12.6.85", "Tue_Oct_29_23:47:06_PDT_2024"),
        ("ptxas-version_13.5.37.txt", "13.5", "13.5.37", "Mon_Oct_12_19:25:48_PDT_2026"),
    ],
)
def test_ptxas_version(name, release, version, built_on):
    facts = parse_ptxas_version(read(name), source=name)
    assert facts["release"] == release
    assert facts["version"] == version
    assert facts["built_on"] == built_on


def test_ptxas_12_1_exact():
    assert parse_ptxas_version(read("ptxas-version_12.1.105.txt")) == {
        "release": "12.1",
        "version": "12.1.105",
        "built_on": "Mon_Apr__3_17:13:45_PDT_2023",
        "build": "cuda_12.1.r12.1/compiler.32688072_0",
    }


def test_nvcc_and_ptxas_of_one_toolkit_agree():
    nvcc = parse_nvcc_version(read("nvcc-version_13.5.37.txt"))
    ptxas = parse_ptxas_version(read("ptxas-version_13.5.37.txt"))
    assert (nvcc["release"], nvcc["version"]) == (ptxas["release"], ptxas["version"])


def test_nvcc_parser_refuses_ptxas_banner_and_vice_versa():
    with pytest.raises(ParseError, match="not nvcc --version output") as info:
        parse_nvcc_version(read("ptxas-version_12.1.105.txt"), source="nvcc --version")
    assert info.value.source == "nvcc --version"
    with pytest.raises(ParseError, match="not ptxas --version output"):
        parse_ptxas_version(read("nvcc-version_12.5.82.txt"), source="ptxas --version")


def test_nvcc_banner_cut_before_release_line_raises():
    lines = read("nvcc-version_11.5.119.txt").splitlines(keepends=True)
    with pytest.raises(ParseError, match="Cuda compilation tools"):
        parse_nvcc_version("".join(lines[:3]), source="nvcc")


@pytest.mark.parametrize("parser", [parse_nvcc_version, parse_ptxas_version])
def test_cuda_tool_empty_raises(parser):
    with pytest.raises(ParseError, match="empty input"):
        parser("", source="tool")


# ---------------------------------------------------------------------------
# CUDA toolkit version.json / version.txt
# ---------------------------------------------------------------------------


def test_cuda_version_json_12_8():
    facts = parse_cuda_version_json(
        read("cuda-version-json_12.8.2_windows.json"), source="version.json"
    )
    assert facts["version"] == "12.8.2"
    assert facts["release"] == "12.8"
    components = facts["components"]
    assert len(components) == 29
    assert "cuda" not in components
    assert components["cuda_nvcc"] == "12.8.93"
    assert components["cuda_cudart"] == "12.8.90"
    assert components["libcublas"] == "12.8.5.5"
    assert components["nvidia_driver"] == "572.61"
    assert components["nsight_vse"] == "2025.1.0.25055"


def test_cuda_version_json_invalid_raises():
    text = read("cuda-version-json_12.8.2_windows.json")
    with pytest.raises(ParseError, match="not valid JSON") as info:
        parse_cuda_version_json(text[: len(text) // 2], source="version.json")
    assert info.value.source == "version.json"
    with pytest.raises(ParseError, match="has no"):
        parse_cuda_version_json('{"cuda_nvcc": {"version": "12.8.93"}}', source="v")
    with pytest.raises(ParseError, match="has no"):
        parse_cuda_version_json("[]", source="v")
    with pytest.raises(ParseError, match="empty input"):
        parse_cuda_version_json("", source="v")


def test_cuda_version_txt_11_0():
    assert parse_cuda_version_txt(read("cuda-version-txt_11.0.207.txt")) == {
        "version": "11.0.207",
        "release": "11.0",
    }


def test_cuda_version_txt_rejects_other_text():
    with pytest.raises(ParseError, match="CUDA Version"):
        parse_cuda_version_txt(read("nvcc-version_11.5.119.txt"), source="version.txt")
    with pytest.raises(ParseError, match="empty input"):
        parse_cuda_version_txt(" ", source="version.txt")


# ---------------------------------------------------------------------------
# The fixtures themselves
# ---------------------------------------------------------------------------


def test_every_fixture_is_documented_and_small():
    sources = read("SOURCES.md")
    fixtures = sorted(p.name for p in NV.iterdir() if p.name != "SOURCES.md")
    assert fixtures, "no fixtures found"
    for name in fixtures:
        assert f"`{name}`" in sources, f"{name} is not listed in SOURCES.md"
        assert (NV / name).stat().st_size < 200 * 1024


def test_xml_with_a_uuid_listed_twice_is_flagged_and_still_read():
    # The real K80 output with every UUID replaced by one placeholder, as
    # anonymised support bundles do (the edit is the test's, the rest is real).
    text = read(K80)
    for uuid in re.findall(r"<uuid>(GPU-[0-9a-f-]+)</uuid>", text):
        text = text.replace(uuid, "GPU-00000000-0000-0000-0000-000000000000")
    facts = parse_nvidia_smi_xml(text, K80)
    assert facts["driver_version"] == "430.26" and facts["gpu_count"] == 4
    assert [g["name"] for g in facts["gpus"]] == ["Tesla K80"] * 4
    assert facts["warnings"] == [
        "GPU UUID GPU-00000000-0000-0000-0000-000000000000 is listed 4 times (an anonymised bundle?); "
        "counting the <gpu> elements"]
