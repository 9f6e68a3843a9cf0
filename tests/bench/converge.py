#!/usr/bin/env python3
"""Benchmark: what a converge costs, measured on a fresh demo-sized cluster.

    tests/bench/converge.py            (scripts/test bench-converge)

Three fresh nodes (podman containers of the node image, reached over SSH
like the demo's), then, in one run:

  P1  site.yml on fresh nodes / the same packages with plain apt-get on fresh
      nodes (the floor: download and unpack)                     goal <= 1.5
  P2  site.yml again, nothing to change / the fresh site.yml      goal <= 0.10
  P3  playbooks/verify.yml / `ansible -m setup` (no fact cache)   goal <= 1.2

It prints the absolute times beside each ratio, and the tasks that cost the
no-op run the most (profile_tasks), so a goal that is not met comes with its
remaining cost named task by task. A benchmark, not a test: it asserts no
time, and fails only when a step itself fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NETWORK = "lockstep-bench"
SUBNET = "10.231.7.0/24"
NODES = {"bn1": "10.231.7.11", "bn2": "10.231.7.12", "bn3": "10.231.7.13"}
STANDIN = ROOT / ".cache" / "standin-apt-bench"
SSH_ARGS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
GOALS = {"P1": 1.5, "P2": 0.10, "P3": 1.2}


def sh(*argv, check=True, capture=False, env=None, cwd=ROOT):
    result = subprocess.run([str(a) for a in argv], check=False, text=True, env=env, cwd=cwd,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.STDOUT if capture else None)
    if check and result.returncode != 0:
        out = (result.stdout or "")[-4000:] if capture else ""
        raise SystemExit(f"bench: {' '.join(map(str, argv))} exited with {result.returncode}\n{out}")
    return result


def timed(*argv, env=None):
    start = time.monotonic()
    result = sh(*argv, capture=True, env=env)
    return time.monotonic() - start, result.stdout


def ensure_network():
    current = sh("podman", "network", "inspect", "-f", "{{range .Subnets}}{{.Subnet}}{{end}}", NETWORK,
                 check=False, capture=True).stdout.strip()
    if current != SUBNET:
        sh("podman", "network", "rm", "-f", NETWORK, check=False, capture=True)
        sh("podman", "network", "create", "--subnet", SUBNET, NETWORK, capture=True)


def fresh_nodes():
    """Three new containers, booted, sshd answering."""
    for name in NODES:
        sh("podman", "rm", "-f", "-t", "5", f"lockstep-bench-{name}", check=False, capture=True)
    for name, ip in NODES.items():
        sh("podman", "run", "-d", "--name", f"lockstep-bench-{name}", "--hostname", name, "--network", NETWORK,
           "--ip", ip, "--privileged", "--systemd=always", "-v", f"{STANDIN}:/srv/lockstep-standin:ro",
           "-v", f"{os.environ['LOCKSTEP_SSH_KEY']}.pub:/root/.ssh/authorized_keys:ro",
           os.environ.get("LOCKSTEP_NODE_IMAGE", "localhost/lockstep-node:debian12"), "/sbin/init", capture=True)
    for name, ip in NODES.items():
        for _attempt in range(60):
            if ssh(ip, "true", check=False).returncode == 0:
                break
            time.sleep(1)
        ssh(ip, "systemctl is-system-running --wait >/dev/null || true")


def ssh(ip, command, check=True):
    return sh("ssh", "-i", os.environ["LOCKSTEP_SSH_KEY"], *SSH_ARGS, f"root@{ip}", command,
              check=check, capture=True)


def inventory(tmp: Path) -> Path:
    """The demo's inventory (its group_vars, its groups) for the bench nodes."""
    inv = tmp / "inventory"
    inv.mkdir()
    (inv / "group_vars").symlink_to(ROOT / "inventories" / "demo" / "group_vars")
    key = os.environ["LOCKSTEP_SSH_KEY"]
    hosts = "\n".join(f"            {n}:\n              ansible_host: {ip}" for n, ip in NODES.items())
    (inv / "hosts.yml").write_text(f"""all:
  vars:
    ansible_connection: ssh
    ansible_user: root
    ansible_ssh_private_key_file: {key}
    ansible_ssh_common_args: {' '.join(SSH_ARGS)}
    ansible_python_interpreter: /usr/bin/python3
    verify_reports_dir: {tmp}/reports
  children:
    cluster:
      children:
        workers:
          hosts:
{hosts}
    head:
      hosts:
        bn1:
    gpu:
      hosts:
        bn1:
        bn2:
        bn3:
""")
    return inv / "hosts.yml"


def slowest_tasks(output: str, count: int = 12) -> list:
    """The TASKS RECAP lines of profile_tasks: "name ---- 1.23s"."""
    lines = re.findall(r"^(.+?) -+ (\d+\.\d+)s$", output, re.MULTILINE)
    return [(name.strip(), float(seconds)) for name, seconds in lines][:count]


def manual_packages(ip: str) -> set:
    return set(ssh(ip, "apt-mark showmanual").stdout.split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="leave the bench nodes running")
    args = parser.parse_args()
    env = dict(os.environ, LOCKSTEP_STANDIN_APT=str(STANDIN), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory", PYTHONUNBUFFERED="1")
    sh(sys.executable, str(ROOT / "tests/standin/build_apt_repo.py"), "--out", str(STANDIN), capture=True)
    ensure_network()
    tmp = Path(tempfile.mkdtemp(prefix="lockstep-bench-"))
    try:
        hosts = inventory(tmp)
        first = next(iter(NODES.values()))
        print("bench: fresh nodes, site.yml, site.yml again, verify.yml and setup", flush=True)
        fresh_nodes()
        image_manual = manual_packages(first)
        t_setup, _ = timed("ansible", "-i", str(hosts), "cluster", "-m", "ansible.builtin.setup", env=env)
        t_converge, out_converge = timed("ansible-playbook", "-i", str(hosts), "site.yml", env=env)
        t_noop, out_noop = timed("ansible-playbook", "-i", str(hosts), "site.yml", env=env)
        changed = re.findall(r"changed=(\d+)", out_noop)
        t_verify, _ = timed("ansible-playbook", "-i", str(hosts), "playbooks/verify.yml", env=env)
        packages = sorted(manual_packages(first) - image_manual)
        apt_state = ssh(first, "tar -C /etc/apt -czf - sources.list sources.list.d keyrings preferences.d | base64 -w0").stdout

        print(f"bench: fresh nodes, plain apt-get install of the same {len(packages)} packages", flush=True)
        fresh_nodes()
        install = (f"echo {apt_state} | base64 -d | tar -C /etc/apt -xzf - && apt-get update -qq && "
                   f"DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
                   f"{' '.join(packages)} >/dev/null")
        start = time.monotonic()
        procs = [subprocess.Popen(["ssh", "-i", os.environ["LOCKSTEP_SSH_KEY"], *SSH_ARGS, f"root@{ip}", install])
                 for ip in NODES.values()]
        if any(p.wait() != 0 for p in procs):
            raise SystemExit("bench: plain apt-get install failed on a node")
        t_apt = time.monotonic() - start
    finally:
        if not args.keep:
            for name in NODES:
                sh("podman", "rm", "-f", "-t", "5", f"lockstep-bench-{name}", check=False, capture=True)
        shutil.rmtree(tmp, ignore_errors=True)

    ratios = {"P1": t_converge / t_apt, "P2": t_noop / t_converge, "P3": t_verify / t_setup}
    print(f"\nLockstep converge benchmark: {len(NODES)} fresh nodes over SSH, {os.cpu_count()} CPU(s)")
    print(f"  fresh site.yml              {t_converge:7.1f} s")
    print(f"  plain apt-get install       {t_apt:7.1f} s   ({len(packages)} packages, same sources)")
    print(f"  site.yml again (no-op)      {t_noop:7.1f} s   (changed={'/'.join(changed) or '?'})")
    print(f"  verify.yml                  {t_verify:7.1f} s")
    print(f"  ansible -m setup            {t_setup:7.1f} s")
    labels = {"P1": "fresh converge / plain apt", "P2": "no-op rerun / fresh converge",
              "P3": "verify.yml / ansible -m setup"}
    for key, value in ratios.items():
        verdict = "met" if value <= GOALS[key] else "NOT met"
        print(f"  {key} {labels[key]:32s} {value:6.2f}x  (goal <= {GOALS[key]}x: {verdict})")
    print("\nwhere the no-op run spends its time (profile_tasks, slowest first):")
    for name, seconds in slowest_tasks(out_noop):
        print(f"  {seconds:6.2f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
