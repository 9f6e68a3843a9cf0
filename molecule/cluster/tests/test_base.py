"""State the base role must leave on every node of the cluster scenario."""

from __future__ import annotations

import json

import pytest
from conftest import ansible_playbook, node

# Packages a node cannot do without: a role that installed nothing fails here.
PACKAGES = ["openssh-server", "build-essential", "gcc", "g++", "make", "git",
            "curl", "gnupg", "ca-certificates", "chrony", "python3-pip", "locales"]


@pytest.mark.parametrize("name", PACKAGES)
def test_package_installed(host, name):
    assert host.package(name).is_installed, f"{name} is not installed"


def test_ssh_and_chrony_running(host):
    for service in ("ssh", "chrony"):
        assert host.service(service).is_running, f"{service} is not running"
        assert host.service(service).is_enabled, f"{service} is not enabled"


def test_chronyd_never_sets_the_clock_of_a_container(host):
    # The container shares the host's clock: chronyd must run with -x.
    pid = host.check_output("cat /run/chrony/chronyd.pid")
    argv = host.file(f"/proc/{pid}/cmdline").content.split(b"\0")
    assert b"-x" in argv, argv
    status = host.check_output("grep CapBnd /proc/%s/status", pid)
    cap_sys_time = 1 << 25
    assert not int(status.split()[1], 16) & cap_sys_time, status


def test_timezone(host, hostvars):
    tz = hostvars["base_timezone"]
    assert host.file("/etc/localtime").linked_to == f"/usr/share/zoneinfo/{tz}"
    assert host.file("/etc/timezone").content_string.strip() == tz
    # What programs see: the zone's abbreviation, not UTC.
    expected = host.check_output(f"TZ={tz} date +%Z")
    assert host.check_output("date +%Z") == expected


def test_locale(host, hostvars):
    loc = hostvars["base_locale"]
    assert f"LANG={loc}" in host.file("/etc/default/locale").content_string.splitlines()
    generated = host.check_output("locale -a").lower().replace("-", "").splitlines()
    assert loc.lower().replace("-", "") in generated


def test_apt_uses_the_mirror_with_all_components(host, hostvars):
    mirror = hostvars["base_apt_mirror"]
    sources = host.file("/etc/apt/sources.list.d/debian.sources").content_string
    assert f"URIs: {mirror}" in sources
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in sources
    assert "trusted=yes" not in sources
    assert host.file("/etc/apt/sources.list").content_string.startswith("# Managed by Lockstep")
    # Live apt state: non-free is enabled, so the NVIDIA driver's userland is known.
    policy = host.check_output("apt-cache policy nvidia-smi")
    assert "Candidate: (none)" not in policy and mirror in policy, policy


def test_etc_hosts_names_every_node_with_its_address(host):
    lines = host.file("/etc/hosts").content_string.splitlines()
    start = lines.index("# BEGIN Lockstep cluster nodes (role base)")
    end = lines.index("# END Lockstep cluster nodes (role base)")
    block = dict(reversed(line.split()) for line in lines[start + 1:end])
    assert sorted(block) == ["dp1", "dp2", "dp3"]
    for name, address in block.items():
        own = node(name).check_output("ip -4 -o addr show scope global").split()
        assert f"{address}/" in " ".join(own), (name, address, own)
        # And this node reaches it under that name.
        assert host.run(f"getent ahostsv4 {name}").stdout.split()[0] == address


def test_verify_playbook_finds_the_nodes_identical(tmp_path):
    """The converged cluster passes verify.yml, with real values compared."""
    result = ansible_playbook("playbooks/verify.yml", "-e", f"verify_reports_dir={tmp_path}")
    assert result.returncode == 0, result.stdout[-3000:]
    report = json.loads((tmp_path / "drift.json").read_text())
    assert report["ok"] and report["hosts"] == ["dp1", "dp2", "dp3"]
    assert report["by_component"]["os.release"]["expected"] == "Debian 12"
    assert report["by_component"]["net.eth0.mtu"]["deviating_hosts"] == []


NODES = ("dp1", "dp2", "dp3")
DP3, STALE = "10.231.1.13", "10.231.1.99"  # dp3's address, and the one it "had" before (nothing has it)


def _hosts_block(name: str) -> dict:
    lines = node(name).file("/etc/hosts").content_string.splitlines()
    start = lines.index("# BEGIN Lockstep cluster nodes (role base)")
    end = lines.index("# END Lockstep cluster nodes (role base)")
    return dict(reversed(line.split()) for line in lines[start + 1:end])


def _cached_address(cache, host, address=None):
    """``host``'s default_ipv4 address in the jsonfile fact cache; with ``address``, set it first.

    ansible-core 2.19 names the file <prefix>s1_<host> and wraps the facts as
    {"__payload__": "<JSON text>"}; earlier versions write <prefix><host> and the facts themselves.
    """
    (path,) = [p for p in cache.iterdir() if p.name == host or p.name.endswith("_" + host)]
    data = json.loads(path.read_text())
    wrapped = "__payload__" in data
    facts = json.loads(data["__payload__"]) if wrapped else data
    key = "ansible_default_ipv4" if "ansible_default_ipv4" in facts else "default_ipv4"
    if address:
        facts[key]["address"] = address
        path.write_text(json.dumps({"__payload__": json.dumps(facts)} if wrapped else facts))
    return facts[key]["address"]


def test_a_node_that_moved_is_named_by_verify_and_fixed_by_a_converge_despite_cached_facts(tmp_path):
    """dp3 "moved" from STALE to its address: its facts cached with the old one (as ansible.cfg's
    jsonfile cache keeps them for 2 h), and dp1 and dp2 still resolve it there."""
    cache = tmp_path / "facts"
    env = {"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache),
           "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "7200"}
    first = ansible_playbook("playbooks/base.yml", env=env)
    assert first.returncode == 0, first.stdout[-3000:]
    assert _cached_address(cache, "dp3", STALE) == STALE
    for name in ("dp1", "dp2"):  # in place: /etc/hosts is a bind mount in a container
        node(name).check_output(f"sed 's/^{DP3} dp3$/{STALE} dp3/' /etc/hosts > /tmp/hosts && cat /tmp/hosts > /etc/hosts")
        assert _hosts_block(name)["dp3"] == STALE

    # verify.yml names each node that resolves dp3 to the old address, and where dp3 is now.
    stale = ansible_playbook("playbooks/verify.yml", "-e", f"verify_reports_dir={tmp_path / 'stale'}")
    assert stale.returncode == 2, stale.stdout[-3000:]
    report = json.loads((tmp_path / "stale" / "drift.json").read_text())
    assert [(d["host"], d["component"], d["expected"], d["actual"]) for d in report["drifts"]] == [
        (name, "net.names", "every node at its own address", f"dp3 -> {STALE} (dp3 has {DP3})") for name in ("dp1", "dp2")]
    assert f"dp1: net.names expected every node at its own address, actual dp3 -> {STALE} (dp3 has {DP3})" in stale.output

    # A converge with the stale cache, no --flush-cache: every node's /etc/hosts has dp3 where it is.
    fixed = ansible_playbook("playbooks/base.yml", env=env)
    assert fixed.returncode == 0, fixed.stdout[-3000:]
    assert [_hosts_block(name)["dp3"] for name in NODES] == [DP3] * 3
    assert _cached_address(cache, "dp3") == DP3  # and the cache holds the address read in that run
    again = ansible_playbook("playbooks/verify.yml", "-e", f"verify_reports_dir={tmp_path / 'fixed'}")
    assert again.returncode == 0, again.stdout[-3000:]
    names = json.loads((tmp_path / "fixed" / "drift.json").read_text())["by_component"]["net.names"]
    assert (names["expected"], names["source"], names["deviating_hosts"]) == ("every node at its own address", "declared", [])
