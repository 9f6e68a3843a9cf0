"""State the base role must leave on every node of the cluster scenario."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import node

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


def test_verify_playbook_finds_the_nodes_identical():
    """The converged cluster passes verify.yml, with real values compared."""
    root = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    reports = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"
    result = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"],
         "playbooks/verify.yml", "-e", f"verify_reports_dir={reports}"],
        cwd=root, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    report = json.loads((reports / "drift.json").read_text())
    assert report["ok"] and report["hosts"] == ["dp1", "dp2", "dp3"]
    assert report["by_component"]["os.release"]["expected"] == "Debian 12"
