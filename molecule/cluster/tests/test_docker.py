"""State the docker role must leave on every node of the cluster scenario.

The nodes run Debian's docker.io (Docker 20.10: no ``dockerd --validate``)
and nvidia-container-toolkit from the local TEST STAND-IN of NVIDIA's
repository (tests/standin/). The declared values come from the inventory
(../inventory.yml sets values other than the defaults), so a role that did
nothing - or wrote the defaults - fails here; ../prepare.yml leaves a user and,
on dp2, a hand-written daemon.json. The last tests run playbooks from the
controller, as an admin would: a bad daemon option must fail before any
restart, and a node with another Docker package must make verify.yml fail
naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ansible_playbook, declared, node

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
STANDIN = ROOT / ".cache" / "standin-apt-cluster"
NODES = ("dp1", "dp2", "dp3")
RUNTIME = "/usr/bin/nvidia-container-runtime"
TOOLKIT = ["nvidia-container-toolkit", "nvidia-container-toolkit-base",
           "libnvidia-container-tools", "libnvidia-container1"]
HAND_LABEL = "lockstep.test/hand-written=yes"  # written by ../prepare.yml on dp2


def docker_info(host) -> dict:
    return json.loads(host.check_output("docker info --format '{{json .}}'"))


def dockerd_state(host) -> tuple[str, str, str]:
    """dockerd's PID, the moment it became active, and daemon.json's hash."""
    show = host.check_output("systemctl show docker -p MainPID -p ActiveEnterTimestampMonotonic")
    digest = host.check_output("sha256sum /etc/docker/daemon.json").split()[0]
    values = dict(line.split("=", 1) for line in show.splitlines())
    return values["MainPID"], values["ActiveEnterTimestampMonotonic"], digest


def playbook(name: str, *extra: str) -> subprocess.CompletedProcess:
    """A concern playbook on the scenario's whole inventory (its linked inventory.yml included)."""
    return ansible_playbook(f"playbooks/{name}", *extra)


# --------------------------------------------------------------------------
# Engine, toolkit, users
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["docker.io", "containerd", *TOOLKIT])
def test_packages_installed(host, name):
    assert host.package(name).is_installed, f"{name} is not installed"


def test_dockerd_and_containerd_run(host):
    for service in ("docker", "containerd"):
        assert host.service(service).is_running, f"{service} is not running"
        assert host.service(service).is_enabled, f"{service} is not enabled"


def test_users_are_in_the_docker_group(host, hostvars):
    users = declared(hostvars["inventory_hostname"])["docker_users"]
    assert users
    for user in users:
        assert "docker" in host.check_output(f"id -nG {user}").split()


def test_toolkit_comes_pinned_from_the_signed_standin_repository(host):
    policy = host.check_output("apt-cache policy nvidia-container-toolkit")
    assert "Installed: 1.14.3-1" in policy, policy
    assert "1001" in policy and "file:/srv/lockstep-standin/libnvidia-container/stable/deb/amd64" in policy, policy
    sources = host.file("/etc/apt/sources.list.d/lockstep-nvidia-container-toolkit.sources").content_string
    assert "Signed-By: /etc/apt/keyrings/lockstep-nvidia-container-toolkit.gpg" in sources
    assert "trusted" not in sources
    # The node trusts exactly this build's throwaway key.
    key = host.file("/etc/apt/keyrings/lockstep-nvidia-container-toolkit.gpg").sha256sum
    assert key == hashlib.sha256((STANDIN / "lockstep-standin.gpg").read_bytes()).hexdigest()
    # The stand-in says what it is.
    assert "Lockstep TEST STAND-IN" in host.check_output("dpkg-query -W -f='${Description}' nvidia-container-toolkit")
    assert host.check_output("nvidia-ctk --version").startswith("NVIDIA Container Toolkit CLI version 1.14.3")


def test_containerd_knows_the_nvidia_runtime(host):
    dump = host.check_output("containerd config dump")
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]' in dump
    assert f'BinaryName = "{RUNTIME}"' in dump
    # The rest of Debian's file is still there.
    assert 'bin_dir = "/usr/lib/cni"' in host.file("/etc/containerd/config.toml").content_string


# --------------------------------------------------------------------------
# daemon.json and the running daemon
# --------------------------------------------------------------------------
def test_docker_info_shows_the_declared_configuration(host, hostvars):
    values = declared(hostvars["inventory_hostname"])
    info = docker_info(host)
    assert info["DefaultRuntime"] == "nvidia"
    assert info["Runtimes"]["nvidia"]["path"] == RUNTIME
    assert host.file(RUNTIME).mode & 0o111
    assert info["RegistryConfig"]["Mirrors"] == [m.rstrip("/") + "/" for m in values["docker_registry_mirrors"]]
    assert info["DockerRootDir"] == values["docker_data_root"]
    assert info["LoggingDriver"] == "json-file"
    assert info["CgroupDriver"] == "systemd"
    assert info["LiveRestoreEnabled"] is True


def test_new_containers_get_the_log_options_and_the_nvidia_runtime(host, hostvars):
    values = declared(hostvars["inventory_hostname"])
    # docker info does not show log-opts: a container created (not started:
    # these nodes cannot run containers) shows what dockerd gives it.
    host.check_output("tar -cf - -T /dev/null | docker import - lockstep-probe:empty")
    try:
        host.check_output("docker create --name lockstep-probe lockstep-probe:empty /none")
        config = json.loads(host.check_output("docker inspect --format '{{json .HostConfig}}' lockstep-probe"))
    finally:
        host.run("docker rm -f lockstep-probe; docker rmi lockstep-probe:empty")
    expected = {k: str(v) for k, v in values["docker_log_opts"].items()}
    assert config["LogConfig"] == {"Type": "json-file", "Config": expected}
    assert config["Runtime"] == "nvidia"


def test_daemon_json_is_written_with_sorted_keys(host):
    text = host.file("/etc/docker/daemon.json").content_string
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_keys_written_by_hand_survive_the_converge():
    dp2 = node("dp2")
    config = json.loads(dp2.file("/etc/docker/daemon.json").content_string)
    assert config["labels"] == [HAND_LABEL]
    assert config["max-concurrent-downloads"] == 7
    assert config["live-restore"] is True  # a managed key: the hand-written false is replaced
    # dockerd runs with the merged file.
    assert HAND_LABEL in docker_info(dp2)["Labels"]
    assert "labels" not in json.loads(node("dp1").file("/etc/docker/daemon.json").content_string)


# --------------------------------------------------------------------------
# What only the node can tell fails in the role, before any restart (bad
# input is the preflight's: tests/tooling/test_preflight_cases.py, and
# molecule/cluster/tests/test_bad_input.py end to end)
# --------------------------------------------------------------------------
def apt_state(host) -> str:
    """What apt trusts and reads, and what is installed and held."""
    return host.check_output(
        "sha256sum /etc/apt/sources.list.d/* /etc/apt/keyrings/* /etc/apt/preferences.d/*; "
        "dpkg-query -W -f='${Package} ${Version} ${Status}\\n' | sort | sha256sum")


def unchanged_recap(out: str) -> bool:
    recap = re.findall(r"changed=(\d+)", out)
    return bool(recap) and set(recap) == {"0"}


def test_an_option_only_the_node_refuses_fails_before_any_restart_and_dockerd_keeps_running(tmp_path):
    # Debian's unit starts dockerd with -H fd://: dockerd would refuse to
    # start with "hosts" in daemon.json too. Only the node's unit tells.
    before = {name: dockerd_state(node(name)) for name in NODES}
    mirrors = {name: docker_info(node(name))["RegistryConfig"]["Mirrors"] for name in NODES}
    bad = tmp_path / "bad-hosts.yml"
    bad.write_text(json.dumps({"all": {"hosts": {"dp3": {"docker_daemon_options": {"hosts": ["tcp://0.0.0.0:2375"]}}}}}))
    result = playbook("docker.yml", "-i", str(bad))
    out = result.output
    assert result.returncode != 0, out[-3000:]
    assert "fatal: [dp3]" in out
    assert "daemon.json option 'hosts': is already set on dockerd's command line" in out, out[-3000:]
    assert "/etc/docker/daemon.json not changed - the merged configuration is invalid" in out
    assert "RUNNING HANDLER" not in out
    for name in NODES:
        # Same dockerd process, started at the same moment, with the same file.
        assert dockerd_state(node(name)) == before[name]
        assert docker_info(node(name))["RegistryConfig"]["Mirrors"] == mirrors[name]
        assert not node(name).run("ls /etc/docker/.daemon.json.*").stdout  # no candidate left


# Docker's real release key: a real key, but not the one that signs the stand-in.
DOCKER_FINGERPRINT = "9DC858229FC7DD38854AE2D88D81803C0EBFCD88"


def test_a_key_with_another_fingerprint_fails_naming_url_and_fingerprint_and_changes_nothing():
    before = {name: apt_state(node(name)) for name in NODES}
    result = playbook("docker.yml", "-e", f"docker_nvidia_repo_key_fingerprint={DOCKER_FINGERPRINT}")
    out = result.output
    assert result.returncode != 0, out[-3000:]
    assert ("key_url file:///srv/lockstep-standin/lockstep-standin.gpg does not provide the declared "
            f"key_fingerprint {DOCKER_FINGERPRINT}") in out, out[-3000:]
    assert "docker_nvidia_repo_key_fingerprint" in out
    assert unchanged_recap(out), out[-2000:]
    for name in NODES:
        assert apt_state(node(name)) == before[name]


def test_an_http_key_url_is_refused():
    result = playbook("docker.yml", "-e", "docker_nvidia_repo_key_url=http://127.0.0.1:9/gpgkey")
    out = result.output
    assert result.returncode != 0
    assert "http://127.0.0.1:9/gpgkey" in out and "docker_nvidia_repo_key_url" in out, out[-3000:]


def test_the_keyring_holds_exactly_the_declared_key(host):
    # The declared fingerprint: the stand-in build's (the demo's group_vars read it from there).
    declared = (STANDIN / "lockstep-standin.fpr").read_text().strip()
    listing = host.check_output(
        "gpg --show-keys --with-colons /etc/apt/keyrings/lockstep-nvidia-container-toolkit.gpg")
    assert [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")][:1] == [declared]
    assert len([line for line in listing.splitlines() if line.startswith("pub:")]) == 1


# --------------------------------------------------------------------------
# verify.yml flags a node with another Docker version
# --------------------------------------------------------------------------
REPACK = """set -e
deb=$(ls /var/cache/apt/archives/docker.io_*.deb | head -n1)
rm -rf /var/tmp/lockstep-repack && mkdir -p /var/tmp/lockstep-repack
cp "$deb" /var/tmp/lockstep-repack/original.deb
dpkg-deb -R "$deb" /var/tmp/lockstep-repack/root
sed -i 's/^Version: .*/&+lockstep.other1/' /var/tmp/lockstep-repack/root/DEBIAN/control
dpkg-deb -Znone -b /var/tmp/lockstep-repack/root /var/tmp/lockstep-repack/other.deb >/dev/null
rm -rf /var/tmp/lockstep-repack/root
dpkg -i /var/tmp/lockstep-repack/other.deb >/dev/null
"""


@pytest.fixture
def dp3_on_another_docker():
    """dp3 gets docker.io at another package version: the same Debian
    package, rebuilt with '+lockstep.other1' appended to its version."""
    dp3 = node("dp3")
    dp3.check_output("bash -c %s", REPACK)
    version = dp3.check_output("dpkg-query -W -f='${Version}' docker.io")
    yield version
    dp3.check_output("dpkg -i /var/tmp/lockstep-repack/original.deb >/dev/null && rm -rf /var/tmp/lockstep-repack")


def verify(reports: Path) -> subprocess.CompletedProcess:
    """verify.yml with Docker's packages compared across nodes too (pkg.<name>), its reports in `reports`."""
    return playbook("verify.yml", "-e", json.dumps({"verify_packages": ["docker.io", "containerd", TOOLKIT[0]],
                                                   "verify_reports_dir": str(reports)}))


def test_a_node_with_another_docker_version_fails_verify_naming_it(dp3_on_another_docker, tmp_path):
    other = dp3_on_another_docker
    assert other.endswith("+lockstep.other1")
    result = verify(tmp_path)
    assert result.returncode != 0
    out = result.output
    good = node("dp1").check_output("dpkg-query -W -f='${Version}' docker.io")
    assert f"dp3: pkg.docker.io expected {good}, actual {other} (differs)" in out, result.stdout[-4000:]
    drifts = json.loads((tmp_path / "drift.json").read_text())["drifts"]
    assert drifts and {d["host"] for d in drifts} == {"dp3"}
    assert "pkg.docker.io" in {d["component"] for d in drifts}
