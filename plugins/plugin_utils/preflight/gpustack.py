# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role gpustack (what roles/gpustack/tasks/preflight.yml checked in Jinja).

Nothing is checked on a node whose gpustack_enabled is false. The server and
the workers are the cluster contract's (roles/cluster/vars/main.yml): the
server is the first node of the inventory's gpustack_server_group, the
workers the nodes of gpustack_worker_group less the server group's. Who
listens on GPUStack's port is the probe's ``listening``; whether a worker
reaches the server its ``connect`` to the server's address and port (a
refused connection is an answer: before the first install nothing listens
there). The token and the database URL are secrets: the engine shows
'(not shown)' for their values, and no message here repeats them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate
from ansible_collections.lockstep.gpu.plugins.plugin_utils.pip_lock import pip_lock
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import where_enabled
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# vars/main.yml's address the workers reach the server at: gpustack_server_address, else the server's
# cluster address (cluster_node_addresses, from every node's facts and host vars), else its name.
VARIABLES: tuple[str, ...] = ("gpustack_server_host",)

PORTS = ("gpustack_port", "gpustack_worker_port")
# gpustack_venv is the cluster contract's, the other two the role's.
DIRECTORIES = ("gpustack_venv", "gpustack_data_dir", "gpustack_config_dir")
TLS = ("gpustack_ssl_certfile", "gpustack_ssl_keyfile")
# The unit the role installs: where it exists, a listener the probe cannot name may be GPUStack itself.
UNIT = "/etc/systemd/system/gpustack.service"
# What ss -p names GPUStack's process (users:(("gpustack",pid=...))).
PROCESS = "gpustack"

# tasks/preflight.yml's regular expressions, matched whole (a trailing newline is no release).
_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+([a-z]+[0-9]*)?")
_DIRECTORY = re.compile(r'/[^\s"]*')
# The token goes into the workers' config.yaml between double quotes.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=:@%-]{16,}")
_DATABASE = re.compile(r"(postgresql|mysql)://")

SERVER_GROUP = ("a group without a node in the inventory, and the GPUStack server runs on its first node: "
                "name a group with at least one node (default head)")
VERSION = "it must be a GPUStack release on PyPI, e.g. 2.3.0"
DIRECTORY = "it must be an absolute path without spaces or quotes"
TOKEN = ("must be at least 16 characters of letters, digits and . _ ~ + / = : @ % - "
         "(no white space, newline, quote or backslash), or empty to let the server make one")
DATABASE = ("does not start with postgresql:// or mysql:// (the only databases GPUStack 2.x supports); "
            "leave it empty for a PostgreSQL on the server node")
TLS_ALLOWED = ("set, but GPUStack 2.x serves TLS (port 443) from its gateway, which only its container image has; "
               "a pip install serves plain HTTP on gpustack_port. Leave gpustack_ssl_certfile and "
               "gpustack_ssl_keyfile empty and put a TLS proxy in front (roles/gpustack/README.md)")
# The role's own locks: a name in its files/ (its default), else a path on the controller.
LOCKS = Path(__file__).resolve().parents[3] / "roles" / "gpustack" / "files"
LOCK = ("it must lock gpustack_version and gpustack_pip_extra_packages, every distribution pinned with its "
        "wheel's sha256 ({why}): make that lock with scripts/gpustack-lock and set gpustack_pip_lock to its absolute path")
LISTENER = "another program listens there ({who}): free the port or choose another one"
UNREACHABLE = ("cannot reach the GPUStack server at {url} ({error}): check gpustack_server_address (empty: the "
               "server node's cluster address, its base_node_address, else its default route's) and the firewall")


def _probe(ctx, host) -> dict:
    answer = ctx.probe(host)
    return answer if isinstance(answer, dict) else {}


def _written(ctx, host, name):
    """The value as the inventory wrote it: the path type expands ~ and $VAR on the controller."""
    raw = ctx.raw.get(host, {}).get(name)
    return raw if isinstance(raw, str) else ctx.var(host, name)


def _group(ctx, host, variable) -> list | None:
    """The inventory's group that variable names (groups[name] | default([])), None when invalid."""
    name = ctx.var(host, variable)
    if not ctx.has(host, variable) or not isinstance(name, str):
        return None
    return list(ctx.groups.get(name) or ())


def role_of(ctx, host) -> str:
    """'server', 'worker' or '' (vars/main.yml's gpustack_is_server, gpustack_is_worker)."""
    servers, workers = _group(ctx, host, "gpustack_server_group"), _group(ctx, host, "gpustack_worker_group")
    if servers and host == servers[0]:
        return "server"
    if servers is not None and workers is not None and host in workers and host not in servers:
        return "worker"
    return ""


def _port(ctx, host, name) -> int | None:
    """A valid port of variable name, else None (refused by the spec, or by the contract's rules: cluster.py)."""
    try:
        return validate.port(ctx.var(host, name)) if ctx.has(host, name) else None
    except validate.Invalid:
        return None


def _server(ctx, host) -> tuple[str, str] | None:
    """(the connect target host:port, the server's URL) a worker reaches, None when unknown."""
    address, port = ctx.var(host, "gpustack_server_host"), _port(ctx, host, "gpustack_port")
    if role_of(ctx, host) != "worker" or not isinstance(address, str) or not address.strip() or port is None:
        return None
    address = address.strip()
    target = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    return target, f"http://{address}:{port}"


def probe(ctx, host) -> dict:
    """The GPUStack unit (is a nameless listener GPUStack?) and, on a worker, a connection to the server."""
    if ctx.var(host, "gpustack_enabled") is not True or not role_of(ctx, host):
        return {}
    request = {"paths": [UNIT]}
    server = _server(ctx, host)
    if server:
        request["connect"] = [server[0]]
    return request


def _server_group(ctx, host):
    """'Refuse a server group without a node'."""
    if _group(ctx, host, "gpustack_server_group") == []:
        yield Problem("gpustack_server_group", ctx.var(host, "gpustack_server_group"), SERVER_GROUP, host)


def _version(ctx, host):
    """'Refuse a version that is not a release number'."""
    version = ctx.var(host, "gpustack_version")
    if ctx.has(host, "gpustack_version") and not (isinstance(version, str) and _VERSION.fullmatch(version)):
        yield Problem("gpustack_version", _written(ctx, host, "gpustack_version"), VERSION, host)


def _lock(ctx, host):
    """A lock that does not pin what the node declares, or that cannot be read (the role's files/, else a path)."""
    name, version = ctx.var(host, "gpustack_pip_lock"), ctx.var(host, "gpustack_version")
    extras = ctx.var(host, "gpustack_pip_extra_packages")
    if not (isinstance(name, str) and name and isinstance(version, str) and isinstance(extras, list)):
        return
    if not _VERSION.fullmatch(version) or not all(isinstance(extra, str) for extra in extras):
        return  # _version names it; the argument spec a list that is not of strings
    path = Path(name) if os.path.isabs(name) else LOCKS / name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        yield Problem("gpustack_pip_lock", name, LOCK.format(why=f"cannot read {path}: {exc}"), host)
        return
    problems = pip_lock(text, [f"gpustack=={version}", *extras])["problems"]
    if problems:
        yield Problem("gpustack_pip_lock", name, LOCK.format(why=validate.short("; ".join(problems), 300)), host)


def _directories(ctx, host):
    """'Refuse a directory that is not an absolute path'."""
    for name in DIRECTORIES:
        value = _written(ctx, host, name)
        if ctx.has(host, name) and not (isinstance(value, str) and _DIRECTORY.fullmatch(value)):
            yield Problem(name, value, DIRECTORY, host)


def _token(ctx, host):
    """'Refuse a registration token that cannot be written into a config file' (never shown)."""
    token = ctx.var(host, "gpustack_token")
    if ctx.has(host, "gpustack_token") and token != "" and not (isinstance(token, str) and _TOKEN.fullmatch(token)):
        yield Problem("gpustack_token", token, TOKEN, host)


def _database_url(ctx, host):
    """'Refuse a database URL GPUStack cannot use' (never shown)."""
    url = ctx.var(host, "gpustack_database_url")
    if ctx.has(host, "gpustack_database_url") and url != "" and not (isinstance(url, str) and _DATABASE.match(url)):
        yield Problem("gpustack_database_url", url, DATABASE, host)


def _tls(ctx, host):
    """'Refuse TLS files, which GPUStack 2.x serves only from its gateway'."""
    for name in TLS:
        if ctx.has(host, name) and ctx.var(host, name) != "":
            yield Problem(name, ctx.var(host, name), TLS_ALLOWED, host)


def _others(ctx, host, port: int) -> list[dict] | None:
    """The listeners on port that are not GPUStack, None when not known. A listener the probe cannot
    name counts as another program unless GPUStack's unit is on the node (then it may be GPUStack)."""
    answer = _probe(ctx, host)
    listening, paths = answer.get("listening"), answer.get("paths")
    if not isinstance(listening, list):
        return None
    installed = not isinstance(paths, Mapping) or paths.get(UNIT) is not False
    return [entry for entry in listening if isinstance(entry, Mapping) and entry.get("proto") == "tcp"
            and entry.get("port") == port and entry.get("process") != PROCESS
            and (entry.get("process") or not installed)]


def _port_taken(ctx, host):
    """'Refuse a port another program holds' (the server's gpustack_port, a worker's gpustack_worker_port)."""
    role = role_of(ctx, host)
    name = "gpustack_port" if role == "server" else "gpustack_worker_port"
    port = _port(ctx, host, name) if role else None
    others = _others(ctx, host, port) if port is not None else None
    if others:
        where: dict[str, list[str]] = {}
        for entry in others:
            where.setdefault(str(entry.get("process") or "a program"), []).append(str(entry.get("address", "?")))
        who = "; ".join(f"{process} on {' and '.join(addresses)}" for process, addresses in where.items())
        yield Problem(name, port, LISTENER.format(who=who), host)


def _server_reachable(ctx, host):
    """'Refuse a server URL the worker cannot reach' (a refused connection still reaches the address)."""
    server = _server(ctx, host)
    connect = _probe(ctx, host).get("connect")
    error = connect.get(server[0]) if server and isinstance(connect, Mapping) else None
    if not isinstance(error, str) or error == "" or "refused" in error.lower():
        return
    yield Problem("gpustack_server_address", ctx.var(host, "gpustack_server_address", ""),
                  UNREACHABLE.format(url=server[1], error=validate.short(error, 120)), host)


RULES = where_enabled("gpustack_enabled", (
    _server_group, _version, _lock, _directories, _token, _database_url, _tls, _port_taken, _server_reachable))
