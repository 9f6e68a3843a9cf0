# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl preflight rules (plugins/plugin_utils/preflight/nccl.py) on hand-built contexts.

The good values are what the molecule cluster scenario's nodes see: the
role's defaults (ethernet profile), interfaces eth0 and lo, the default route
on eth0. nccl_conf_settings and nccl_socket_ifname_effective are written out
as roles/nccl/vars/main.yml renders them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, nccl
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

ROLE = Path(__file__).resolve().parents[2] / "roles" / "nccl"
HOST = "dp1"
DEFAULTS = {
    "nccl_version": "2.18.3-1", "nccl_cuda_version": "12.1", "nccl_package_version": "2.18.3-1+cuda12.1",
    "nccl_packages": ["libnccl2", "libnccl-dev"], "nccl_hold": True, "nccl_fabric": "ethernet",
    "nccl_socket_ifname": "", "nccl_socket_nthreads": 4, "nccl_nsocks_perthread": 4, "nccl_ib_hca": [],
    "nccl_ib_gid_index": 3, "nccl_ib_tc": 106, "nccl_net_gdr_level": "PHB", "nccl_ib_pci_relaxed_ordering": 1,
    "nccl_topo_file": "", "nccl_conf_overrides": {}, "nccl_conf_path": "/etc/nccl.conf",
    "nccl_ib_sysfs": "/sys/class/infiniband",
}
ETHERNET = {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_DISABLE": 1, "NCCL_SOCKET_NTHREADS": 4,
            "NCCL_NSOCKS_PERTHREAD": 4}
INFINIBAND = {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_DISABLE": 0, "NCCL_IB_HCA": "", "NCCL_NET_GDR_LEVEL": "PHB",
              "NCCL_IB_PCI_RELAXED_ORDERING": 1, "NCCL_TOPO_FILE": ""}
ROCE = {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_DISABLE": 0, "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
        "NCCL_IB_GID_INDEX": 3, "NCCL_IB_TC": 106}
PROBE = {"interfaces": {"eth0": {"mtu": 1500, "addresses": ["10.231.1.11"], "up": True, "speed": 10000},
                        "lo": {"mtu": 65536, "addresses": ["127.0.0.1"], "up": True, "speed": None}},
         "hcas": {}, "paths": {}}
FACTS = {"interfaces": ["eth0", "lo"], "default_ipv4": {"interface": "eth0", "address": "10.231.1.11"}}
SOCKETS = "NCCL_SOCKET_NTHREADS=32 x NCCL_NSOCKS_PERTHREAD=4 = 128: NCCL allows at most 64 sockets"


def _ctx(settings=None, probe=None, absent=(), facts=None, **values) -> Context:
    """One node of the cluster scenario with values over the defaults; `absent`: refused by the spec."""
    merged = dict(DEFAULTS, nccl_socket_ifname_effective="=eth0", nccl_conf_settings=dict(settings or ETHERNET))
    merged.update(values)
    for name in absent:
        merged.pop(name)
    return Context(hosts=[HOST], groups={"all": [HOST], "gpu": [HOST]}, values={HOST: merged},
                   facts={HOST: FACTS if facts is None else facts}, probes={HOST: PROBE if probe is None else probe})


def _problems(ctx, rules=nccl.RULES) -> list[Problem]:
    return [problem for rule in rules for problem in rule(ctx)]


def _lines(ctx, rules=nccl.RULES) -> list[str]:
    return [problem.line() for problem in _problems(ctx, rules)]


def test_the_defaults_are_the_roles():
    assert yaml.safe_load((ROLE / "defaults" / "main.yml").read_text(encoding="utf-8")) == DEFAULTS | {
        "nccl_package_version": "{{ nccl_version }}+cuda{{ nccl_cuda_version }}"}


def test_the_cluster_scenario_passes():
    assert _problems(_ctx()) == []
    assert nccl.probe(_ctx(), HOST) == {}


# --- test_bad_input.py's nccl cases (nccl-fabric-omnipath and nccl-relaxed-ordering-choice are the spec's) ---

def test_infiniband_without_hca():
    assert _lines(_ctx(INFINIBAND, nccl_fabric="infiniband")) == [
        "dp1: nccl_ib_hca is '[]': empty, but nccl_fabric is infiniband: list the HCAs NCCL should use "
        "(e.g. [mlx5_0:1, mlx5_1:1]), or choose nccl_fabric ethernet"]


def test_version_not_a_package_version():
    assert _lines(_ctx(nccl_version="2.18")) == [
        "dp1: nccl_version is '2.18': must look like 2.18.3-1 (release and revision; "
        "the package version is 2.18+cuda12.1)"]


def test_unknown_variable():
    ctx = _ctx(dict(ETHERNET, NCCL_NO_SUCH_KNOB=1), nccl_conf_overrides={"NCCL_NO_SUCH_KNOB": 1})
    assert _lines(ctx) == [
        "dp1: nccl_conf_overrides.NCCL_NO_SUCH_KNOB is '1': NCCL_NO_SUCH_KNOB is not an NCCL variable Lockstep "
        "knows (NCCL ignores unknown keys silently; check the spelling against NCCL's documentation)"]


def test_missing_interface():
    ctx = _ctx(dict(ETHERNET, NCCL_SOCKET_IFNAME="=eth9"), nccl_socket_ifname="=eth9",
               nccl_socket_ifname_effective="=eth9")
    assert _lines(ctx) == [
        "dp1: nccl_socket_ifname is '=eth9': NCCL_SOCKET_IFNAME==eth9: no interface named 'eth9' on this node "
        "(it has: eth0, lo)"]


def test_socket_threads():
    ctx = _ctx(dict(ETHERNET, NCCL_SOCKET_NTHREADS=32), nccl_socket_nthreads=32)
    assert _problems(ctx) == [
        Problem("nccl_socket_nthreads", 32, "NCCL_SOCKET_NTHREADS=32: must be between 1 and 16", HOST),
        Problem("nccl_socket_nthreads", 32, SOCKETS + " (fix nccl_socket_nthreads or nccl_nsocks_perthread)", HOST)]


# --- more cases, rule by rule ----------------------------------------------------------------------

def test_cuda_version_without_minor():
    assert _problems(_ctx(nccl_cuda_version="12")) == [
        Problem("nccl_cuda_version", "12", "must look like 12.1 (CUDA major.minor; "
                "the package version is 2.18.3-1+cuda12)", HOST)]


@pytest.mark.parametrize("version", ["2.18.3", "2.18.3-1+cuda12.1", "v2.18.3-1", "2.18.3-1\n"])
def test_other_versions_refused(version):
    assert [p.variable for p in _problems(_ctx(nccl_version=version), [nccl._version])] == ["nccl_version"]


def test_roce_without_hca():
    settings = dict(ROCE, NCCL_IB_HCA="")
    assert [(p.variable, p.allowed[:32]) for p in _problems(_ctx(settings, nccl_fabric="roce"))] == [
        ("nccl_ib_hca", "empty, but nccl_fabric is roce: ")]


def test_no_default_route():
    ctx = _ctx(dict(ETHERNET, NCCL_SOCKET_IFNAME="="), nccl_socket_ifname_effective="=", facts={"interfaces": []})
    # Only the missing route: the filter is not also told about NCCL_SOCKET_IFNAME "=".
    assert _lines(ctx) == [
        "dp1: nccl_socket_ifname is '': empty, and the node has no default route to derive NCCL_SOCKET_IFNAME "
        "from: set nccl_socket_ifname (e.g. \"=ens1f0\")"]


def test_a_one_letter_prefix_is_an_interface_list():
    ctx = _ctx(dict(ETHERNET, NCCL_SOCKET_IFNAME="e"), nccl_socket_ifname="e", nccl_socket_ifname_effective="e")
    assert _problems(ctx) == []


def _infiniband(topo: str, exists, **values) -> Context:
    settings = dict(INFINIBAND, NCCL_IB_HCA="=mlx5_0", NCCL_TOPO_FILE=topo)
    settings.update(values.get("nccl_conf_overrides", {}))
    probe = dict(PROBE, hcas={"mlx5_0": ["1"]}, paths={} if exists is None else {topo: exists})
    return _ctx(settings, probe, nccl_fabric="infiniband", nccl_ib_hca=["mlx5_0"], **values)


def test_topology_file_missing():
    ctx = _infiniband("/opt/topo.xml", False, nccl_topo_file="/opt/topo.xml")
    assert nccl.probe(ctx, HOST) == {"paths": ["/opt/topo.xml"]}
    assert _lines(ctx) == ["dp1: nccl_topo_file is '/opt/topo.xml': NCCL_TOPO_FILE /opt/topo.xml does not exist "
                           "on the node"]


def test_topology_file_present_or_not_probed():
    assert _problems(_infiniband("/opt/topo.xml", True, nccl_topo_file="/opt/topo.xml")) == []
    assert _problems(_infiniband("/opt/topo.xml", None, nccl_topo_file="/opt/topo.xml")) == []


def test_topology_file_of_the_overrides():
    ctx = _infiniband("/x/t.xml", False, nccl_conf_overrides={"NCCL_TOPO_FILE": "/x/t.xml"})
    assert _problems(ctx) == [
        Problem("nccl_conf_overrides.NCCL_TOPO_FILE", "/x/t.xml", "NCCL_TOPO_FILE /x/t.xml does not exist on the node",
                HOST)]


def test_relative_topology_file_is_the_filters():
    ctx = _infiniband("topo.xml", None, nccl_topo_file="topo.xml")
    assert nccl.probe(ctx, HOST) == {}
    assert _lines(ctx) == ["dp1: nccl_topo_file is 'topo.xml': NCCL_TOPO_FILE=topo.xml: must be an absolute path"]


def _roce(hcas, **values) -> Context:
    hca = values.pop("nccl_ib_hca", ["mlx5_0:1", "mlx5_1:1"])
    settings = dict(ROCE, NCCL_IB_HCA="=" + ",".join(hca))
    return _ctx(settings, dict(PROBE, hcas=hcas), nccl_fabric="roce", nccl_ib_hca=hca, **values)


def test_hcas_of_the_probe():
    assert _problems(_roce({"mlx5_0": ["1"], "mlx5_1": ["1", "2"]})) == []


def test_hca_missing():
    assert _lines(_roce({"mlx5_0": ["1"], "mlx5_1": ["1"]}, nccl_ib_hca=["mlx5_0:1", "mlx5_7:1"])) == [
        "dp1: nccl_ib_hca is '['mlx5_0:1', 'mlx5_7:1']': NCCL_IB_HCA==mlx5_0:1,mlx5_7:1: no HCA named 'mlx5_7' "
        "on this node (it has: mlx5_0, mlx5_1)"]


def test_hca_port_missing_and_no_rdma_device():
    assert [p.allowed for p in _problems(_roce({"mlx5_0": ["1", "odd"], "mlx5_1": ["2"]}))] == [
        "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1: HCA mlx5_1 has no port 1 on this node (ports: 2)"]
    assert len(_problems(_roce({}))) == 2
    assert _problems(_roce("not a mapping")) == []  # no usable answer: not judged


def test_hcas_of_a_stand_in_sysfs():
    sysfs = "/srv/lockstep-standin-sysfs/infiniband"
    ctx = _roce({}, nccl_ib_sysfs=sysfs + "/", nccl_ib_hca=["mlx5_0:1", "mlx5_7:1"])
    assert nccl.probe(ctx, HOST) == {"hca_roots": [sysfs]}
    # The stand-in has mlx5_0 and mlx5_1 (molecule/nccl/prepare.yml), both with port 1.
    ctx.probes[HOST]["hcas_at"] = {sysfs: {"mlx5_0": ["1"], "mlx5_1": ["1"]}}
    assert [p.allowed for p in _problems(ctx)] == [
        "NCCL_IB_HCA==mlx5_0:1,mlx5_7:1: no HCA named 'mlx5_7' on this node (it has: mlx5_0, mlx5_1)"]
    ctx.probes[HOST]["hcas_at"][sysfs]["mlx5_7"] = ["1"]
    assert _problems(ctx) == []


def test_override_sets_a_bad_value_and_two_variables():
    overrides = {"NCCL_NSOCKS_PERTHREAD": 32, "NCCL_DEBUG": "LOUD"}
    ctx = _ctx(dict(ETHERNET, NCCL_SOCKET_NTHREADS=4, **overrides), nccl_conf_overrides=overrides)
    assert _problems(ctx) == [
        Problem("nccl_conf_overrides.NCCL_DEBUG", "LOUD", "NCCL_DEBUG=LOUD: must be one of VERSION, WARN, INFO, TRACE",
                HOST),
        Problem("nccl_socket_nthreads", 4, "NCCL_SOCKET_NTHREADS=4 x NCCL_NSOCKS_PERTHREAD=32 = 128: NCCL allows at "
                "most 64 sockets (fix nccl_socket_nthreads or nccl_conf_overrides.NCCL_NSOCKS_PERTHREAD)", HOST)]


def test_a_value_the_spec_refused_is_not_reported_again():
    ctx = _ctx(dict(ETHERNET, NCCL_SOCKET_NTHREADS="many"), absent=["nccl_socket_nthreads"])
    assert _problems(ctx) == []


def test_odd_input_never_raises():
    odd = _ctx(probe={"hcas": None, "interfaces": 3, "paths": []}, facts={},
               absent=["nccl_version", "nccl_cuda_version", "nccl_ib_hca", "nccl_socket_ifname_effective"])
    odd.values[HOST]["nccl_conf_settings"] = "not a mapping"
    assert _problems(odd) == [] and nccl.probe(odd, HOST) == {}
    huge = {"NCCL_IB_TIMEOUT": "1" * 5000, 7: None}
    ctx = _ctx(dict(ETHERNET, **{"NCCL_IB_TIMEOUT": "1" * 5000}), probe={}, facts={}, nccl_conf_overrides=huge)
    assert [p.variable for p in _problems(ctx)] == ["nccl_conf_overrides"]
