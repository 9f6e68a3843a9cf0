# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the preflight's rules read on a node, in one Python process (module preflight_probe).

Every function only reads. The interfaces, HCAs, listening sockets, memory
and container markers are read on every call; the rest answers the request
(paths, files, names, packages, users, TCP connections). Each answer has
the shape plugins/plugin_utils/preflight/__init__.py documents.
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess

# A file larger than this is answered None (the rules read small system files).
READ_LIMIT = 1024 * 1024
# /proc/net/{tcp,udp}[6]: the socket state of a listening TCP socket and of a bound UDP one.
_LISTEN = {"tcp": "0A", "udp": "07"}


def _text(path: str) -> str | None:
    try:
        if os.path.getsize(path) > READ_LIMIT:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def interface_addresses(ip_json) -> dict[str, list[str]]:
    """{interface: [address]} from `ip -j addr show`'s parsed output."""
    return {link.get("ifname", ""): [a.get("local", "") for a in link.get("addr_info", []) if a.get("local")]
            for link in ip_json or []}


def interfaces(sys_net: str = "/sys/class/net", addresses: dict | None = None) -> dict:
    """{name: {"mtu", "addresses", "up", "speed"}} of the node's network interfaces."""
    found = {}
    for name in sorted(os.listdir(sys_net)) if os.path.isdir(sys_net) else []:
        base = os.path.join(sys_net, name)
        speed = _int(_text(os.path.join(base, "speed")))
        found[name] = {"mtu": _int(_text(os.path.join(base, "mtu"))),
                       "addresses": (addresses or {}).get(name, []),
                       "up": (_text(os.path.join(base, "operstate")) or "").strip() in ("up", "unknown"),
                       "speed": speed if speed is not None and speed > 0 else None}
    return found


def hcas(sys_ib: str = "/sys/class/infiniband") -> dict[str, list[str]]:
    """{RDMA device: [port numbers]}."""
    found = {}
    for hca in sorted(os.listdir(sys_ib)) if os.path.isdir(sys_ib) else []:
        ports = os.path.join(sys_ib, hca, "ports")
        found[hca] = sorted(os.listdir(ports), key=lambda p: (len(p), p)) if os.path.isdir(ports) else []
    return found


def _address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def socket_owners(proc: str = "/proc") -> dict[str, str]:
    """{socket inode: name (comm) of the lowest pid holding it}, as ss -p names them (root sees every process)."""
    owners: dict[str, str] = {}
    for pid in sorted((name for name in os.listdir(proc) if name.isdigit()), key=int):
        fds = os.path.join(proc, pid, "fd")
        try:
            names = os.listdir(fds)
        except OSError:  # gone, or not ours to read
            continue
        comm = (_text(os.path.join(proc, pid, "comm")) or "").strip()
        for fd in names:
            try:
                link = os.readlink(os.path.join(fds, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                owners.setdefault(link[8:-1], comm)
    return owners


def listening(proc_net: str = "/proc/net", owners: dict[str, str] | None = None) -> list[dict]:
    """Every listening TCP and bound UDP socket: {"proto", "address", "port", "process"} ("" when unknown)."""
    owners = socket_owners() if owners is None else owners
    found = []
    for proto, state in _LISTEN.items():
        for suffix in ("", "6"):
            for line in (_text(os.path.join(proc_net, proto + suffix)) or "").splitlines()[1:]:
                fields = line.split()
                if len(fields) < 4 or fields[3] != state:
                    continue
                address, port = fields[1].rsplit(":", 1)
                entry = {"proto": proto, "address": _address(address), "port": int(port, 16),
                         "process": owners.get(fields[9], "") if len(fields) > 9 else ""}
                if entry not in found:
                    found.append(entry)
    return found


def memory_mb(meminfo: str = "/proc/meminfo") -> int | None:
    for line in (_text(meminfo) or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def resolve(name: str) -> list[str]:
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(name, None)})
    except (OSError, UnicodeError):
        return []


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def connect(target: str, timeout: float = 3.0) -> str:
    """"" when a TCP connection to host:port succeeds, else the error."""
    host, _colon, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return ""
    except (OSError, ValueError) as error:
        return str(error)


def packages(names: list[str]) -> dict[str, str]:
    """{package: installed version, or ""} from dpkg's status (nothing is written)."""
    if not names:
        return {}
    run = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status} ${Version}\n", *names],
                         capture_output=True, text=True, check=False)
    found = dict.fromkeys(names, "")
    for line in run.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] == "installed":
            found[fields[0].split(":")[0]] = fields[2]
    return found


def answer(request: dict, ip_json=None) -> dict:
    """The whole answer for one request (see the module's documentation)."""
    return {
        "interfaces": interfaces(addresses=interface_addresses(ip_json)),
        "hcas": hcas(),
        "listening": listening(),
        "memory_mb": memory_mb(),
        "markers": {path: os.path.exists(path) for path in ("/.dockerenv", "/run/.containerenv")},
        "hcas_at": {root: hcas(root) for root in request.get("hca_roots") or []},
        "paths": {path: os.path.exists(path) for path in request.get("paths") or []},
        "read": {path: _text(path) for path in request.get("read") or []},
        "resolved": {name: resolve(name) for name in request.get("resolve") or []},
        "packages": packages(list(request.get("packages") or [])),
        "users": {name: user_exists(name) for name in request.get("users") or []},
        "connect": {target: connect(target) for target in request.get("connect") or []},
    }
