"""Tests for lockstep_rdma over real ibstat and ibv_devinfo outputs.

Every fixture is a real output of a real machine; tests/fixtures/rdma/SOURCES.md
says where each comes from. Truncated inputs are cut from them at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.rdma import parse_ibstat, parse_ibv_devinfo

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"

RDMA = FIXTURES / "rdma"
NDR_ACTIVE = "ibstat_h100_ndr_ib_all_active.txt"
NDR_SOME_DOWN = "ibstat_h100_ndr_ib_some_down.txt"
ROCE_POLLING = "ibstat_h100_roce_400g_port_polling.txt"
IBSTATS = (NDR_ACTIVE, NDR_SOME_DOWN, ROCE_POLLING)
AZURE = "ibv_devinfo_azure_hb120rs_v3_cx6_vf.txt"
MLX4_DUAL = "ibv_devinfo_mlx4_connectx3_dual_port.txt"
MLX4_VERBOSE = "ibv_devinfo_mlx4_port2_verbose.txt"
DEVINFOS = (AZURE, MLX4_DUAL, MLX4_VERBOSE)


def read(name):
    return (RDMA / name).read_text()


def by_name(result):
    return {ca["name"]: ca for ca in result["cas"]}


# --------------------------------------------------------------------------
# ibstat
# --------------------------------------------------------------------------


def test_ibstat_ndr_infiniband_all_active():
    result = parse_ibstat(read(NDR_ACTIVE), source=NDR_ACTIVE)
    names = [ca["name"] for ca in result["cas"]]
    assert names == [
        "mlx5_0",
        "mlx5_1",
        "mlx5_4",
        "mlx5_5",
        "mlx5_6",
        "mlx5_7",
        "mlx5_8",
        "mlx5_9",
        "mlx5_bond_0",
    ]
    cas = by_name(result)
    mlx5_0 = cas["mlx5_0"]
    assert mlx5_0["ca_type"] == "MT4129"
    assert mlx5_0["firmware"] == "28.41.1000"
    assert mlx5_0["hardware"] == "0"
    assert mlx5_0["node_guid"] == "0x58a2e10300a7820e"
    assert mlx5_0["number_of_ports"] == 1
    assert mlx5_0["ports"] == [
        {
            "port": 1,
            "state": "Active",
            "physical_state": "LinkUp",
            "rate": 400,
            "base_lid": 128,
            "lmc": 0,
            "sm_lid": 1,
            "capability_mask": "0xa751e848",
            "port_guid": "0x58a2e10300a7820e",
            "link_layer": "InfiniBand",
        }
    ]
    assert isinstance(mlx5_0["ports"][0]["rate"], int)
    assert cas["mlx5_9"]["ports"][0]["base_lid"] == 2015
    infiniband = [ca for ca in result["cas"] if ca["ports"][0]["link_layer"] == "InfiniBand"]
    assert len(infiniband) == 8
    assert {ca["firmware"] for ca in infiniband} == {"28.41.1000"}
    bond = cas["mlx5_bond_0"]
    assert (bond["ca_type"], bond["firmware"], bond["hardware"]) == ("MT41692", "32.38.3056", "1")
    assert bond["ports"][0]["link_layer"] == "Ethernet"
    assert bond["ports"][0]["rate"] == 200


def test_ibstat_ndr_with_ports_down_tab_indented():
    result = parse_ibstat(read(NDR_SOME_DOWN), source=NDR_SOME_DOWN)
    assert len(result["cas"]) == 12
    ports = {ca["name"]: ca["ports"][0] for ca in result["cas"]}
    down = sorted(name for name, port in ports.items() if port["state"] == "Down")
    assert down == ["mlx5_2", "mlx5_7", "mlx5_8"]
    assert ports["mlx5_2"]["physical_state"] == "Disabled"
    assert ports["mlx5_2"]["rate"] == 40
    assert ports["mlx5_2"]["link_layer"] == "Ethernet"
    ib = [name for name, port in ports.items() if port["link_layer"] == "InfiniBand"]
    assert len(ib) == 8
    assert all(ports[name]["rate"] == 400 and ports[name]["sm_lid"] == 334 for name in ib)
    assert ports["mlx5_10"]["base_lid"] == 828
    cas = by_name(result)
    assert cas["mlx5_1"]["ca_type"] == "MT4125"
    assert cas["mlx5_1"]["firmware"] == "22.38.1002"
    assert cas["mlx5_2"]["system_image_guid"] == "0x946dae0300c2b690"
    assert {ca["firmware"] for ca in result["cas"]} == {"28.39.1002", "22.38.1002"}


def test_ibstat_roce_port_polling():
    result = parse_ibstat(read(ROCE_POLLING), source=ROCE_POLLING)
    assert len(result["cas"]) == 12
    ports = {ca["name"]: ca["ports"][0] for ca in result["cas"]}
    assert {p["link_layer"] for p in ports.values()} == {"Ethernet"}
    assert ports["mlx5_11"]["state"] == "Down"
    assert ports["mlx5_11"]["physical_state"] == "Polling"
    assert ports["mlx5_5"]["physical_state"] == "Disabled"
    active_400 = sorted(n for n, p in ports.items() if p["state"] == "Active" and p["rate"] == 400)
    assert active_400 == ["mlx5_0", "mlx5_10", "mlx5_3", "mlx5_4", "mlx5_6", "mlx5_9"]
    active_100 = sorted(n for n, p in ports.items() if p["state"] == "Active" and p["rate"] == 100)
    assert active_100 == ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]
    assert all(p["base_lid"] == 0 and p["sm_lid"] == 0 for p in ports.values())
    assert ports["mlx5_7"]["port_guid"] == "0x0000000000000000"


@pytest.mark.parametrize("name", IBSTATS)
def test_ibstat_cut_before_last_link_layer(name):
    text = read(name)
    cut = text[: text.rindex("Link layer:")]
    with pytest.raises(ParseError, match=r"port 1 lacks link_layer; the output is truncated"):
        parse_ibstat(cut, source=name)


@pytest.mark.parametrize("name", IBSTATS)
def test_ibstat_cut_mid_last_line(name):
    text = read(name).rstrip("\n")
    cut = text[:-4]  # "Link layer: InfiniB" / "Link layer: Ethe"
    with pytest.raises(ParseError, match="unknown link layer"):
        parse_ibstat(cut)


@pytest.mark.parametrize("name", IBSTATS)
def test_ibstat_cut_inside_last_ca_header(name):
    text = read(name)
    cut = text[: text.rindex("Port 1:")]
    last = cut.rsplit("CA '", 1)[1].split("'")[0]  # name of the CA that was cut
    with pytest.raises(
        ParseError, match="CA %s has no 'Port N:' block; the output is truncated" % last
    ):
        parse_ibstat(cut)


@pytest.mark.parametrize("name", IBSTATS)
def test_ibstat_cut_after_port_line(name):
    text = read(name)
    start = text.rindex("Port 1:")
    cut = text[: text.index("\n", start) + 1]
    with pytest.raises(ParseError, match="lacks state, physical_state, rate, link_layer"):
        parse_ibstat(cut)


@pytest.mark.parametrize("text", ["", "\n \n", None])
def test_ibstat_empty_input(text):
    with pytest.raises(ParseError, match="input"):
        parse_ibstat(text)


def test_ibstat_rejects_ibv_devinfo_output():
    with pytest.raises(ParseError, match="is this ibstat output"):
        parse_ibstat(read(AZURE), source=AZURE)


# --------------------------------------------------------------------------
# ibv_devinfo
# --------------------------------------------------------------------------


def test_ibv_devinfo_azure_infiniband_and_ethernet_vf():
    result = parse_ibv_devinfo(read(AZURE), source=AZURE)
    assert [h["hca_id"] for h in result["hcas"]] == ["mlx5_0", "mlx5_1"]
    ib, eth = result["hcas"]
    assert ib["transport"] == "InfiniBand"
    assert ib["fw_ver"] == "20.31.1014"
    assert ib["vendor_id"] == "0x02c9"
    assert ib["vendor_part_id"] == 4124
    assert ib["board_id"] == "MT_0000000223"
    assert ib["phys_port_cnt"] == 1
    port = ib["ports"][0]
    assert port["port"] == 1
    assert port["state"] == "PORT_ACTIVE"
    assert (port["max_mtu"], port["active_mtu"]) == (4096, 4096)
    assert (port["sm_lid"], port["port_lid"]) == (228, 383)
    assert port["link_layer"] == "InfiniBand"
    assert eth["fw_ver"] == "14.30.1284"
    assert eth["hw_ver"] == "0x80"
    assert eth["ports"][0]["link_layer"] == "Ethernet"
    assert eth["ports"][0]["active_mtu"] == 1024


def test_ibv_devinfo_dual_port_with_port_down():
    result = parse_ibv_devinfo(read(MLX4_DUAL), source=MLX4_DUAL)
    assert [h["hca_id"] for h in result["hcas"]] == ["mlx4_1", "mlx4_0"]
    for hca in result["hcas"]:
        assert hca["phys_port_cnt"] == 2
        assert hca["fw_ver"] == "2.42.5000"
        assert [p["port"] for p in hca["ports"]] == [1, 2]
        assert [p["state"] for p in hca["ports"]] == ["PORT_ACTIVE", "PORT_DOWN"]
    mlx4_0 = result["hcas"][1]
    assert mlx4_0["node_guid"] == "e41d:2d03:00e0:c740"
    assert (mlx4_0["ports"][0]["sm_lid"], mlx4_0["ports"][0]["port_lid"]) == (18, 32)


def test_ibv_devinfo_verbose_single_port_of_two():
    # "ibv_devinfo -d mlx4_1 -i 2 -v": one port listed of phys_port_cnt 2.
    result = parse_ibv_devinfo(read(MLX4_VERBOSE), source=MLX4_VERBOSE)
    (hca,) = result["hcas"]
    assert hca["hca_id"] == "mlx4_1"
    assert hca["phys_port_cnt"] == 2
    (port,) = hca["ports"]
    assert port["port"] == 2
    assert port["state"] == "PORT_DOWN"
    assert port["phys_state"] == "POLLING"
    assert port["active_width"] == "4X"
    assert port["active_speed"] == "2.5 Gbps"
    assert port["link_layer"] == "InfiniBand"


@pytest.mark.parametrize("name", DEVINFOS)
def test_ibv_devinfo_cut_before_last_link_layer(name):
    text = read(name)
    cut = text[: text.rindex("link_layer:")]
    with pytest.raises(ParseError, match="lacks link_layer; the output is truncated"):
        parse_ibv_devinfo(cut, source=name)


def test_ibv_devinfo_cut_between_ports_of_last_hca():
    text = read(MLX4_DUAL)
    cut = text[: text.rindex("\t\tport:\t2")]
    with pytest.raises(ParseError, match=r"HCA mlx4_0 has phys_port_cnt 2 but only port\(s\) 1"):
        parse_ibv_devinfo(cut)


def test_ibv_devinfo_cut_before_any_port():
    text = read(AZURE)
    cut = text[: text.rindex("\t\tport:")]
    with pytest.raises(ParseError, match="HCA mlx5_1 lists no 'port:' block"):
        parse_ibv_devinfo(cut)


@pytest.mark.parametrize("text", ["", "\t\n", None])
def test_ibv_devinfo_empty_input(text):
    with pytest.raises(ParseError, match="input"):
        parse_ibv_devinfo(text)


def test_ibv_devinfo_rejects_ibstat_output():
    with pytest.raises(ParseError, match="is this ibv_devinfo output"):
        parse_ibv_devinfo(read(NDR_ACTIVE))
