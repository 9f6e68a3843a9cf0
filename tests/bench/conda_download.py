#!/usr/bin/env python3
"""Benchmark: bytes fetched from outside, and time, of a 3-node conda converge.

    tests/bench/conda_download.py          (scripts/test bench-conda)

One environment (the stand-in Python and pip from a conda channel, plus real
PyPI wheels: numpy, pandas, requests and their dependencies; the py-rattler
installer wheel comes from the same index) is solved once with
scripts/conda-lock, then installed with playbooks/conda.yml on three fresh
nodes (podman containers reached over SSH), once per variant:

  cache     conda_cluster_cache true: the controller fetches the lock once
            into the cluster cache, each node gets its copy over SSH
  mounted   the same, the nodes see the cluster cache mounted (shared store)
  no cache  conda_cluster_cache false: every node downloads the lock itself

"Outside" is a TEST STAND-IN: containers cannot reach PyPI or conda-forge,
so a small HTTP server of this script, on the podman network's gateway,
serves the channel (/channel) and a PEP 503 index of the wheels (/simple),
and counts the bytes it actually sends, per client. The lock is solved
against it, so every URL of the lock points at it.

It prints, per variant, the bytes served during the converge, their ratio to
one copy of the environment (the sum of the sizes of the lock's files, the
installer's wheel included; goal 1.0x with the cluster cache), who fetched
them (controller or nodes), and the converge time. A benchmark, not a test:
it asserts no time and no ratio, and fails only when a step itself fails.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "collections"))
# pylint: disable=wrong-import-position
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import normalize_package_name  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.conda_cache import cache_files, sha256_file  # noqa: E402
from converge import SSH_ARGS, sh, ssh  # noqa: E402  (the same helpers as the converge benchmark)

NETWORK = "lockstep-bench13"
SUBNET = "10.231.11.0/24"
GATEWAY = "10.231.11.1"
PREFIX = "lockstep-bench13-"
NODES = {"bc1": "10.231.11.11", "bc2": "10.231.11.12", "bc3": "10.231.11.13"}
WORK = ROOT / ".cache" / "bench-conda"
STANDIN = WORK / "standin"  # tests/standin/conda/build_channel.py's output
WHEELS = WORK / "wheels"
MOUNT = "/srv/conda-cache"
# The environment: a moderate real set (about 56 MB with the installer), not
# the 2.7 GB torch set of the demo; --pip replaces it.
PIP_SET = ["numpy==1.26.4", "pandas==2.2.2", "requests==2.32.3"]
PYTHON = "3.11"
WHEEL_TARGET = ["--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                "--platform", "manylinux2014_x86_64"]


class Outside:
    """TEST STAND-IN for the channel and the pip index: an HTTP server that counts what it sends."""

    def __init__(self, mbit: float = 0):
        self.lock = threading.Lock()
        # A shared outside link of mbit Mbit/s (0: as fast as the host serves):
        # every block waits for its turn on it, whichever client asked.
        self.rate = mbit * 1e6 / 8
        self.link_free = 0.0
        self.sent = defaultdict(int)  # client IP -> bytes of file bodies
        self.files = defaultdict(int)  # file name -> times sent in full
        outside = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                path = self.path.split("?", 1)[0]
                if path.startswith("/channel/"):
                    outside.send_file(self, STANDIN / "channel", path[len("/channel/"):])
                elif path.startswith("/files/"):
                    outside.send_file(self, WHEELS, path[len("/files/"):])
                elif path.startswith("/simple/"):
                    outside.send_index(self, path[len("/simple/"):].strip("/"))
                else:
                    self.send_error(404)

        self.server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)  # noqa: S104 - the nodes reach it on the gateway
        self.port = self.server.server_address[1]
        self.url = f"http://{GATEWAY}:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self):
        with self.lock:
            self.sent.clear()
            self.files.clear()

    def send_file(self, handler, base: Path, rel: str):
        path = (base / rel).resolve()
        if base.resolve() not in path.parents or not path.is_file():
            handler.send_error(404)
            return
        size = path.stat().st_size
        handler.send_response(200)
        handler.send_header("Content-Length", str(size))
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Cache-Control", "no-store")
        handler.end_headers()
        sent = 0
        with open(path, "rb") as src:
            for block in iter(lambda: src.read(1 << 18), b""):
                self.throttle(len(block))
                try:
                    handler.wfile.write(block)
                except OSError:
                    break
                sent += len(block)
        with self.lock:
            self.sent[handler.client_address[0]] += sent
            if sent == size:
                self.files[path.name] += 1

    def throttle(self, size: int):
        if not self.rate:
            return
        with self.lock:
            now = time.monotonic()
            self.link_free = max(now, self.link_free) + size / self.rate
            until = self.link_free
        time.sleep(max(0.0, until - now))

    def send_index(self, handler, project: str):
        wheels = sorted(WHEELS.glob("*.whl"))
        if project:
            links = [f'<a href="/files/{w.name}#sha256={sha256_file(str(w))}">{html.escape(w.name)}</a><br>'
                     for w in wheels if normalize_package_name(w.name.split("-")[0]) == project]
            if not links:
                handler.send_error(404)
                return
        else:
            names = sorted({normalize_package_name(w.name.split("-")[0]) for w in wheels})
            links = [f'<a href="/simple/{n}/">{n}</a><br>' for n in names]
        body = ("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n").encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Cache-Control", "no-store")
        handler.end_headers()
        handler.wfile.write(body)

    def report(self):
        with self.lock:
            return dict(self.sent), dict(self.files)


def prepare_standin(pip_set):
    """The stand-in channel (python, pip) and the real PyPI wheels of the set and of py-rattler, on the host."""
    sh(sys.executable, ROOT / "tests/standin/conda/build_channel.py", STANDIN, capture=True)
    from importlib.metadata import version  # pylint: disable=import-outside-toplevel
    rattler = f"py-rattler=={version('py-rattler')}"
    stamp = WHEELS / ".set"
    want = " ".join(sorted(pip_set + [rattler]))
    if not stamp.is_file() or stamp.read_text() != want:
        shutil.rmtree(WHEELS, ignore_errors=True)
        WHEELS.mkdir(parents=True)
        sh(sys.executable, "-m", "pip", "download", "-q", *WHEEL_TARGET, "-d", WHEELS, *pip_set, rattler,
           capture=True)
        stamp.write_text(want)


def ensure_network():
    current = sh("podman", "network", "inspect", "-f", "{{range .Subnets}}{{.Subnet}}{{end}}", NETWORK,
                 check=False, capture=True).stdout.strip()
    if current != SUBNET:
        sh("podman", "network", "rm", "-f", NETWORK, check=False, capture=True)
        sh("podman", "network", "create", "--subnet", SUBNET, "--gateway", GATEWAY, NETWORK, capture=True)


def remove_nodes():
    for name in NODES:
        sh("podman", "rm", "-f", "-t", "0", PREFIX + name, check=False, capture=True)


def fresh_nodes(mount: Path | None = None):
    """Three new containers, booted, sshd answering; pip for the node's Python, told to trust the stand-in."""
    remove_nodes()
    volumes = ["-v", f"{os.environ['LOCKSTEP_SSH_KEY']}.pub:/root/.ssh/authorized_keys:ro"]
    if mount:
        volumes += ["-v", f"{mount}:{MOUNT}:ro"]
    for name, ip in NODES.items():
        sh("podman", "run", "-d", "--name", PREFIX + name, "--hostname", name, "--network", NETWORK, "--ip", ip,
           "--privileged", "--systemd=always", *volumes,
           os.environ.get("LOCKSTEP_NODE_IMAGE", "localhost/lockstep-node:debian12"), "/sbin/init", capture=True)
    # The node image has no pip, which the conda_env module needs to download
    # wheels without the cluster cache: every variant gets it, from the wheel.
    pip_wheel = next((STANDIN / "wheels").glob("pip-*.whl"))
    for name, ip in NODES.items():
        for _attempt in range(60):
            if ssh(ip, "true", check=False).returncode == 0:
                break
            time.sleep(1)
        ssh(ip, "systemctl is-system-running --wait >/dev/null || true")
        sh("podman", "cp", pip_wheel, f"{PREFIX}{name}:/tmp/{pip_wheel.name}", capture=True)
        ssh(ip, f"python3 /tmp/{pip_wheel.name}/pip install -q --no-index --break-system-packages "
                f"/tmp/{pip_wheel.name} && printf '[global]\\ntrusted-host = {GATEWAY}\\n' >/etc/pip.conf")


def inventory(tmp: Path, outside: Outside, pip_set) -> Path:
    inv = tmp / "inventory"
    inv.mkdir()
    key = os.environ["LOCKSTEP_SSH_KEY"]
    hosts = {n: {"ansible_host": ip} for n, ip in NODES.items()}
    data = {"all": {
        "vars": {
            "ansible_connection": "ssh", "ansible_user": "root", "ansible_ssh_private_key_file": key,
            "ansible_ssh_common_args": " ".join(SSH_ARGS), "ansible_python_interpreter": "/usr/bin/python3",
            "conda_environments": [{
                "name": "bench", "python": PYTHON, "packages": ["pip"], "pip": list(pip_set),
                "channels": [f"{outside.url}/channel"],
            }],
            "conda_pip_index_url": f"{outside.url}/simple/",
        },
        "children": {"cluster": {"children": {"workers": {"hosts": hosts}}}, "head": {"hosts": {"bc1": None}}},
    }}
    (inv / "hosts.yml").write_text("---\n" + yaml.safe_dump(data, sort_keys=False))
    return inv / "hosts.yml"


def one_copy(lock: dict) -> tuple[int, int]:
    """(files, bytes) of one copy of the environment: every file of the lock, the installer's wheel included."""
    sizes = {p.name: p.stat().st_size for p in (STANDIN / "channel").rglob("*") if p.is_file()}
    sizes.update({p.name: p.stat().st_size for p in WHEELS.glob("*.whl")})
    files = cache_files(lock)
    return len(files), sum(sizes[f.rsplit("/", 1)[-1]] for f in files)


def task_times(output: str) -> dict:
    """profile_tasks' recap: task name -> seconds."""
    return {name.strip(): float(s) for name, s in re.findall(r"^(.+?) -+ (\d+\.\d+)s$", output, re.MULTILINE)}


def converge(hosts: Path, env: dict, extra: dict, outside: Outside) -> dict:
    outside.reset()
    args = []
    for key, value in extra.items():
        args += ["-e", f"{key}={value}"]
    start = time.monotonic()
    out = sh("ansible-playbook", "-i", hosts, "playbooks/conda.yml", *args, capture=True, env=env).stdout
    seconds = time.monotonic() - start
    sent, files = outside.report()
    changed = "/".join(re.findall(r"changed=(\d+)", out))
    return {"seconds": seconds, "sent": sent, "files": files, "changed": changed, "tasks": task_times(out)}


def mb(size: int) -> str:
    return f"{size / 1e6:8.1f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pip", nargs="+", default=PIP_SET, metavar="NAME==VERSION",
                        help=f"the environment's pip packages (default: {' '.join(PIP_SET)})")
    parser.add_argument("--outside-mbit", type=float, default=0, metavar="N",
                        help="serve the stand-in over a shared link of N Mbit/s (default: unthrottled)")
    parser.add_argument("--keep", action="store_true", help="leave the bench nodes and their network")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    prepare_standin(args.pip)
    ensure_network()
    # The controller's pip reads no pip.conf (this machine's adds local
    # wheel directories, which would bypass the stand-in) and keeps no cache.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN="memory", PYTHONUNBUFFERED="1",
               PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1", PIP_TRUSTED_HOST=GATEWAY,
               PIP_DISABLE_PIP_VERSION_CHECK="1", NO_PROXY=f"{GATEWAY},{env.get('NO_PROXY', '')}",
               no_proxy=f"{GATEWAY},{env.get('no_proxy', '')}")
    outside = Outside(args.outside_mbit)
    load = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="lockstep-bench13-"))
    results = {}
    started = time.monotonic()
    try:
        hosts = inventory(tmp, outside, args.pip)
        print("bench: fresh nodes; scripts/conda-lock against the stand-in", flush=True)
        fresh_nodes()  # before the lock: the gateway the stand-in is reached on exists with them
        outside.reset()
        start = time.monotonic()
        sh(sys.executable, "scripts/conda-lock", hosts.parent, capture=True, env=env)
        t_lock = time.monotonic() - start
        lock_sent = sum(outside.report()[0].values())
        lock = yaml.safe_load((hosts.parent / "conda-lock.yml").read_text())
        n_files, copy_bytes = one_copy(lock)
        variants = [
            ("cache", "cluster cache, copied to each node over SSH", {"conda_cluster_cache": "true"}, False),
            ("mounted", "cluster cache, mounted on each node", {"conda_cluster_cache": "true",
                                                                "conda_cluster_cache_mount": MOUNT}, True),
            ("no cache", "conda_cluster_cache false: each node downloads", {"conda_cluster_cache": "false"}, False),
        ]
        for index, (key, label, extra, mounted) in enumerate(variants):
            cache = tmp / f"cache-{index}"
            cache.mkdir()
            extra = dict(extra, conda_cluster_cache_dir=cache)
            print(f"bench: fresh nodes, playbooks/conda.yml: {label}", flush=True)
            if index:  # the first variant gets the nodes the lock step started (still bare)
                fresh_nodes(cache if mounted else None)
            results[key] = converge(hosts, env, extra, outside)
            if key == "cache":
                print("bench: playbooks/conda.yml again (nothing to change)", flush=True)
                results["rerun"] = converge(hosts, env, extra, outside)
    finally:
        if not args.keep:
            remove_nodes()
            sh("podman", "network", "rm", "-f", NETWORK, check=False, capture=True)
        outside.server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nLockstep conda download benchmark: 3 fresh nodes over SSH, {os.cpu_count()} CPU(s), "
          f"{time.monotonic() - started:.0f} s in all")
    print(f"  environment: stand-in python {PYTHON} + pip (conda), {' '.join(args.pip)} (PyPI wheels, with their "
          f"dependencies), installer py-rattler {lock['installer']['version']}")
    print(f"  one copy: {n_files} files, {mb(copy_bytes).strip()} (the lock's files, the installer's wheel included)")
    link = f"a shared {args.outside_mbit:g} Mbit/s link" if args.outside_mbit else "unthrottled (local speed)"
    print(f"  outside: TEST STAND-IN HTTP server on {GATEWAY} (channel + PEP 503 index), {link}, "
          "bytes counted as sent")
    print(f"  load average (1 min) at the start {load:.1f}, at the end {os.getloadavg()[0]:.1f}: "
          "other work on this machine skews the times")
    print(f"  scripts/conda-lock: {t_lock:.1f} s, {mb(lock_sent).strip()} fetched (once per lock, not per converge)\n")
    print(f"  {'variant':10s} {'from outside':>12s} {'ratio':>7s}  {'controller':>11s} {'nodes':>11s}  "
          f"{'converge':>9s}  changed")
    for key in ("cache", "mounted", "no cache", "rerun"):
        res = results[key]
        total = sum(res["sent"].values())
        ctrl = sum(v for ip, v in res["sent"].items() if ip not in NODES.values())
        label = "cache, 2nd" if key == "rerun" else key
        print(f"  {label:10s} {mb(total)} {total / copy_bytes:6.2f}x  {mb(ctrl)} {mb(total - ctrl)}  "
              f"{res['seconds']:7.1f} s  {res['changed']}")
    print("  goal: 1.00x with the cluster cache (one copy per cluster); without it each node fetches its own "
          f"(expected {len(NODES)}.00x)")
    if not args.outside_mbit:
        fetched = {k: sum(results[k]["sent"].values()) for k in ("cache", "no cache")}
        print("  the stand-in serves at local speed, so these times leave out an internet download's; over a "
              "shared 100 Mbit/s link it would add " + " and ".join(f"{v * 8 / 1e8:.0f} s ({k})" for k, v in fetched.items())
              + " (computed, not measured: --outside-mbit 100 measures it)")
    print("  the most times one file was sent in a converge: "
          + ", ".join(f"{k} {max(results[k]['files'].values(), default=0)}" for k in results))
    print("\nwhere each converge spends its time (profile_tasks, the conda role's download and install tasks):")
    wanted = ("Fetch the environments once", "Copy the files of this node", "Install each environment",
              "Find the environments that differ")
    for key in ("cache", "mounted", "no cache"):
        for name, seconds in results[key]["tasks"].items():
            if any(w in name for w in wanted):
                print(f"  {key:9s} {seconds:7.2f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
