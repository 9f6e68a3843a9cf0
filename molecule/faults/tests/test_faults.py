"""Faults a real cluster meets, each put on the converged nodes and taken away again.

The tests run in this file's order, each leaving the three nodes as the
converge left them for the next: a held package removed by force, a
daemon.json broken by hand, a repository that does not answer, the dpkg lock
held, and last (it moves a node to another address and back) a node stopped
in the middle of a converge.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import testinfra
from conftest import NO_COLOUR, SSH_ARGS, ansible_playbook, node

NODES = ("ft1", "ft2", "ft3")
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
CONVERGE = str(SCENARIO / "converge.yml")
NETWORK = "lockstep-faults"
HOME_ADDRESS, MOVED_ADDRESS = "10.231.8.13", "10.231.8.23"
# The podman network's gateway is the host: nothing listens on its port 9.
DEAD_URL = "http://10.231.8.1:9/cuda/debian12/x86_64"
RECAP = re.compile(r"\b(ft\d)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


def recap(output: str) -> dict:
    """{node: {changed, unreachable, failed}} from a playbook's recap (molecule makes Ansible colour it)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    return {m[1]: {"changed": int(m[3]), "unreachable": int(m[4]), "failed": int(m[5])} for m in RECAP.finditer(plain)}


def podman(*args: str) -> str:
    return subprocess.run(["podman", *args], check=True, capture_output=True, text=True).stdout


def at(address: str):
    """A node reached at an address of the test's choosing (conftest's node() knows the declared ones)."""
    return testinfra.get_host(f"ssh://root@{address}", ssh_identity_file=os.environ["LOCKSTEP_SSH_KEY"],
                              ssh_extra_args=SSH_ARGS)


def wait_for_ssh(address: str, tries: int = 60) -> None:
    for _ in range(tries):
        probe = subprocess.run(["ssh", *SSH_ARGS.split(), "-o", "ConnectTimeout=3", "-o", "ControlMaster=no",
                                "-i", os.environ["LOCKSTEP_SSH_KEY"], f"root@{address}", "systemctl is-system-running --wait"],
                               capture_output=True, text=True, check=False)
        if probe.stdout.strip() in ("running", "degraded"):
            return
        time.sleep(2)
    raise AssertionError(f"no SSH at {address}: {probe.stdout} {probe.stderr}")


def installed(host, package: str) -> bool:
    """Unpacked and configured; a held package's status reads "hold ok installed"."""
    return host.run(f"dpkg-query -W -f '${{Status}}' {package}").stdout in ("install ok installed", "hold ok installed")


# 1. A held package removed by force ----------------------------------------

def test_a_held_package_removed_by_force_fails_verify_naming_node_and_component_and_the_converge_restores_it():
    ft2 = node("ft2")
    assert ft2.check_output("apt-mark showhold").split() == ["libnccl-dev", "libnccl2"]
    ft2.check_output("dpkg --remove --force-depends --force-hold libnccl2")
    assert not installed(ft2, "libnccl2")

    broken = ansible_playbook("playbooks/verify.yml")
    assert broken.returncode != 0
    # verify.yml's line per drift: host, component, expected, actual.
    assert re.search(r"ft2: nccl\.package expected 2\.18\.3-1\+cuda12\.1, actual ", broken.output), broken.output[-3000:]
    assert re.search(r"ft2: pkg\.libnccl2 expected ", broken.output), broken.output[-3000:]
    assert not re.search(r"ft[13]: (nccl|pkg)\.", broken.output)

    converge = ansible_playbook("playbooks/nccl.yml")
    assert converge.returncode == 0, converge.output[-3000:]
    assert recap(converge.output)["ft2"]["changed"] > 0
    assert {n: r["changed"] for n, r in recap(converge.output).items() if n != "ft2"} == {"ft1": 0, "ft3": 0}
    assert installed(ft2, "libnccl2")
    assert ft2.check_output("apt-mark showhold").split() == ["libnccl-dev", "libnccl2"]
    assert ansible_playbook("playbooks/verify.yml").returncode == 0


# 2. daemon.json broken by hand ---------------------------------------------

@pytest.fixture
def broken_daemon_json():
    ft2 = node("ft2")
    good = ft2.file("/etc/docker/daemon.json").content_string
    ft2.check_output("printf '%s' '{\"log-driver\": \"json-file\",' > /etc/docker/daemon.json")
    yield ft2
    ft2.check_output(f"printf '%s' '{good}' > /etc/docker/daemon.json")
    assert ft2.file("/etc/docker/daemon.json").content_string == good


def test_an_invalid_hand_written_daemon_json_fails_naming_the_file_and_is_left_alone_with_dockerd_running(
        broken_daemon_json):
    ft2 = broken_daemon_json
    before = ft2.file("/etc/docker/daemon.json").content_string
    dockerd = ft2.check_output("systemctl show -p MainPID --value docker")

    result = ansible_playbook("playbooks/docker.yml")
    assert result.returncode != 0
    assert re.search(r"ft2\b.*/etc/docker/daemon\.json is not valid JSON", result.output), result.output[-3000:]
    assert ft2.file("/etc/docker/daemon.json").content_string == before
    assert ft2.service("docker").is_running
    assert ft2.check_output("systemctl show -p MainPID --value docker") == dockerd
    rows = recap(result.output)
    assert rows["ft2"]["failed"] == 1 and rows["ft2"]["changed"] == 0
    assert {n: (r["failed"], r["changed"]) for n, r in rows.items() if n != "ft2"} == {"ft1": (0, 0), "ft3": (0, 0)}


# 3. A repository that does not answer --------------------------------------

def test_a_repository_that_does_not_answer_fails_naming_url_and_variable_and_changes_nothing():
    sums = "md5sum /etc/apt/sources.list.d/* /etc/apt/keyrings/* /etc/apt/preferences.d/*"
    before = {n: node(n).check_output(sums) for n in NODES}

    result = ansible_playbook("playbooks/nccl.yml", "-e", f"nvidia_repo_url={DEAD_URL}")
    assert result.returncode != 0
    assert DEAD_URL in result.output and "nvidia_repo_url" in result.output, result.output[-3000:]
    rows = recap(result.output)
    assert sorted(rows) == list(NODES)
    assert {r["changed"] for r in rows.values()} == {0}
    for n in NODES:
        assert node(n).check_output(sums) == before[n]
        assert installed(node(n), "libnccl2") and installed(node(n), "libnccl-dev")


# 4. The dpkg lock held -----------------------------------------------------

# Holds apt's three locks as apt does (fcntl), until the unit is stopped.
HOLD_LOCKS = (
    "systemd-run --unit lockstep-test-dpkg-lock python3 -c "
    "'import fcntl, time\n"
    "files = [open(p, \"a\") for p in (\"/var/lib/dpkg/lock-frontend\", \"/var/lib/dpkg/lock\", \"/var/lib/apt/lists/lock\")]\n"
    "[fcntl.lockf(f, fcntl.LOCK_EX) for f in files]\n"
    "time.sleep(900)'"
)


@pytest.fixture
def ft2_without_rsync():
    """ft2 lacks one of the base packages, so that the base playbook needs apt there."""
    ft2 = node("ft2")
    ft2.check_output("apt-get remove -y rsync")
    yield ft2
    ft2.run("systemctl stop lockstep-test-dpkg-lock")
    ft2.check_output("apt-get install -y rsync")


def test_the_dpkg_lock_held_past_the_timeout_fails_naming_node_holder_and_variable(ft2_without_rsync):
    ft2 = ft2_without_rsync
    ft2.check_output(HOLD_LOCKS)
    holder = ft2.check_output("systemctl show -p MainPID --value lockstep-test-dpkg-lock")

    result = ansible_playbook("playbooks/base.yml", "-e", "apt_repo_lock_timeout=5", "-e", "apt_repo_lock_retries=1")
    assert result.returncode != 0
    assert re.search(rf"The dpkg lock is held on ft2: /var/lib/dpkg/lock-frontend, held by process {holder} \(python3\)",
                     result.output), result.output[-3000:]
    assert "apt_repo_lock_timeout (now 5" in result.output and "apt_repo_lock_retries (now 1)" in result.output
    rows = recap(result.output)
    assert rows["ft2"]["failed"] == 1
    assert {n: r["failed"] for n, r in rows.items() if n != "ft2"} == {"ft1": 0, "ft3": 0}
    assert not installed(ft2, "rsync")


def test_a_dpkg_lock_released_in_time_is_waited_for_and_the_converge_passes(ft2_without_rsync):
    ft2 = ft2_without_rsync
    ft2.check_output(HOLD_LOCKS)
    command = ["ansible-playbook", "-i", os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"]),
               "playbooks/base.yml", "-e", "apt_repo_lock_timeout=300"]
    with subprocess.Popen(command, cwd=os.environ["MOLECULE_PROJECT_DIRECTORY"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=dict(os.environ, **NO_COLOUR)) as run:
        lines = []
        for line in run.stdout:
            lines.append(line)
            if "TASK [lockstep.gpu.base : Install the base packages]" in line:
                break
        # apt is now waiting on ft2 for the lock, which is still held.
        assert ft2.service("lockstep-test-dpkg-lock").is_running
        time.sleep(3)
        ft2.check_output("systemctl stop lockstep-test-dpkg-lock")
        lines.extend(run.stdout)
    output = "".join(lines)
    assert run.returncode == 0, output[-3000:]
    assert installed(ft2, "rsync")


# 5. A node stopped in the middle of a converge, back with a new address ---

@pytest.fixture
def moved_inventory(tmp_path):
    """A copy of the scenario's inventory in which ft3 has its new address."""
    inventory = Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent
    for entry in inventory.iterdir():
        (tmp_path / entry.name).symlink_to(entry.resolve())
    # Read after the others (inventory sources load in name order): its ansible_host wins.
    (tmp_path / "zz-moved.yml").write_text(f"all:\n  hosts:\n    ft3:\n      ansible_host: {MOVED_ADDRESS}\n")
    yield str(tmp_path)
    # ft3 back at its declared address, and every node's /etc/hosts with it.
    subprocess.run(["podman", "stop", "-t", "5", "ft3"], check=False, capture_output=True)
    podman("network", "disconnect", NETWORK, "ft3")
    podman("network", "connect", "--ip", HOME_ADDRESS, NETWORK, "ft3")
    podman("start", "ft3")
    wait_for_ssh(HOME_ADDRESS)
    back = ansible_playbook("playbooks/base.yml")
    assert back.returncode == 0, back.output[-3000:]
    for n in NODES:
        assert re.search(rf"^{re.escape(HOME_ADDRESS)} ft3$", node(n).file("/etc/hosts").content_string, re.M)


def addresses(host, name: str) -> set[str]:
    """Every address /etc/hosts gives the name: role base's line, and podman's own on the node itself."""
    return {line.split()[0] for line in host.file("/etc/hosts").content_string.splitlines()
            if name in line.split("#")[0].split()[1:]}


def test_a_node_stopped_mid_converge_is_named_the_others_finish_and_its_new_address_reaches_every_node(
        moved_inventory):
    command = ["ansible-playbook", "-i", os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"]), CONVERGE]
    # One SSH try with a short timeout for the stopped node, not molecule's five.
    env = dict(os.environ, **NO_COLOUR, ANSIBLE_SSH_RETRIES="1", ANSIBLE_TIMEOUT="10")
    with subprocess.Popen(command, cwd=os.environ["MOLECULE_PROJECT_DIRECTORY"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env) as run:
        lines = []
        for line in run.stdout:
            lines.append(line)
            if line.startswith("PLAY [Docker engine"):
                break
        podman("stop", "-t", "5", "ft3")
        lines.extend(run.stdout)
    output = " ".join("".join(lines).split())
    assert run.returncode != 0
    assert re.search(r"UNREACHABLE! .{0,40}\[ft3\]|\[ft3\]: UNREACHABLE!", output), output[-3000:]
    rows = recap(output)
    assert rows["ft3"]["unreachable"] >= 1
    assert {n: (r["failed"], r["unreachable"]) for n, r in rows.items() if n != "ft3"} == {"ft1": (0, 0), "ft2": (0, 0)}
    for n in ("ft1", "ft2"):
        assert node(n).service("docker").is_running
        assert installed(node(n), "libnccl2")

    podman("network", "disconnect", NETWORK, "ft3")
    podman("network", "connect", "--ip", MOVED_ADDRESS, NETWORK, "ft3")
    podman("start", "ft3")
    wait_for_ssh(MOVED_ADDRESS)
    assert addresses(node("ft1"), "ft3") == {HOME_ADDRESS}

    fixed = ansible_playbook(CONVERGE, inventory=moved_inventory)
    assert fixed.returncode == 0, fixed.output[-3000:]
    for host in (node("ft1"), node("ft2"), at(MOVED_ADDRESS)):
        assert addresses(host, "ft3") == {MOVED_ADDRESS}
        assert f"{MOVED_ADDRESS} ft3" in host.file("/etc/hosts").content_string.splitlines()
    verify = ansible_playbook("playbooks/verify.yml", inventory=moved_inventory)
    assert verify.returncode == 0, verify.output[-3000:]
