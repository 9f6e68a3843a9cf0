# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared storage for gpu_facts: the bundle file ``storage.json`` built on the
node (:func:`build_storage`) from its NFS entries in /etc/fstab, its NFS
mounts (/proc/self/mounts) and the NFS exports it serves (/etc/exports,
/etc/exports.d/*.exports, nfs-ganesha's EXPORT blocks), and its parser
(:func:`parse_storage`).

``mounts`` is keyed by mount point; each holds ``fstab`` (the entry that
configures it: ``source``, ``fstype``, ``options``) and ``mounted`` (the live
mount, same fields), either None. ``exports`` lists ``{path, server,
clients}`` and ``server_running`` says whether an NFS server runs (the kernel's
nfsd threads or ganesha.nfsd). Standard library only: this runs on managed
nodes (Python 3.9+).
"""

from __future__ import annotations

import glob
import json
import os
import re

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError

FSTAB = "/etc/fstab"
MOUNTS = "/proc/self/mounts"
EXPORTS = ("/etc/exports", "/etc/exports.d/*.exports")
GANESHA_CONF = "/etc/ganesha/ganesha.conf"
KERNEL_SERVER = "nfs-kernel-server"
GANESHA = "nfs-ganesha"

_ENTRY_FIELDS = ("source", "fstype", "options")


def _unescape(field: str) -> str:
    """fstab(5) and /proc/mounts write a space in a path as \\040 (octal)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def nfs_entries(text: str) -> dict:
    """``{mount point: {source, fstype, options}}`` of the NFS lines (fstype
    nfs or nfs4) of an fstab or /proc/mounts text; the last line of a mount
    point wins (the mount on top)."""
    found = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#") or len(fields) < 3:
            continue
        if fields[2] not in ("nfs", "nfs4"):
            continue
        found[_unescape(fields[1])] = {
            "source": _unescape(fields[0]),
            "fstype": fields[2],
            "options": fields[3] if len(fields) > 3 else "defaults",
        }
    return found


def kernel_exports(text: str) -> list:
    """``[{path, server, clients}]`` from exports(5) text (continuation lines joined)."""
    found = []
    for line in (text or "").replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith('"'):
            path, _sep, rest = line[1:].partition('"')
        else:
            path, _sep, rest = line.partition(" ")
        clients = sorted(re.sub(r"\(.*?\)", "", item) or "*" for item in rest.split())
        found.append({"path": path, "server": KERNEL_SERVER, "clients": clients})
    return found


_BLOCK = re.compile(r"\bEXPORT\s*\{", re.I)


def ganesha_exports(text: str) -> list:
    """``[{path, server, clients}]`` of the EXPORT blocks of a ganesha.conf
    (its Path and the Clients of its CLIENT blocks)."""
    text = re.sub(r"#[^\n]*", "", text or "")
    found = []
    for match in _BLOCK.finditer(text):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        block = text[match.end():end]
        path = re.search(r"^\s*Path\s*=\s*\"?([^\";]+)\"?\s*;", block, re.I | re.M)
        if not path:
            continue
        clients = []
        for value in re.findall(r"\bClients\s*=\s*([^;]+);", block, re.I):
            clients.extend(c.strip().strip('"') for c in value.split(","))
        found.append({"path": path.group(1).strip(), "server": GANESHA, "clients": sorted(c for c in clients if c)})
    return found


def nfs_server_running(proc="/proc") -> bool:
    """Whether a kernel nfsd thread or ganesha.nfsd runs on this node."""
    for comm in glob.glob(os.path.join(proc, "[0-9]*", "comm")):
        try:
            with open(comm, encoding="utf-8", errors="replace") as handle:
                if handle.read().strip() in ("nfsd", "ganesha.nfsd"):
                    return True
        except OSError:
            continue
    return False


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read(), None
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"


def build_storage(fstab=FSTAB, mounts=MOUNTS, exports=EXPORTS, ganesha_conf=GANESHA_CONF, read=_read,
                  running=nfs_server_running):
    """``(text, problem)``: the JSON text of ``storage.json``, None when the
    node has no NFS entry, mount or export; ``problem`` names what exists but
    cannot be read."""
    problems = []

    def text_of(path):
        text, problem = read(path)
        if problem:
            problems.append(problem)
        return text

    configured = nfs_entries(text_of(fstab))
    live = nfs_entries(text_of(mounts))
    served = []
    for pattern in exports:
        for path in sorted(glob.glob(pattern)) if "*" in pattern else [pattern]:
            served.extend(kernel_exports(text_of(path)))
    served.extend(ganesha_exports(text_of(ganesha_conf)))
    if problems:
        return None, "; ".join(problems)
    if not configured and not live and not served:
        return None, None
    data = {
        "mounts": {point: {"fstab": configured.get(point), "mounted": live.get(point)}
                   for point in sorted(set(configured) | set(live))},
        "exports": served,
        "server_running": bool(served) and running(),
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n", None


def _entry(value, field, source):
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != set(_ENTRY_FIELDS) \
            or not all(isinstance(value[k], str) for k in _ENTRY_FIELDS):
        raise ParseError(f"{field} must be null or an object of strings {', '.join(_ENTRY_FIELDS)}", source)
    return dict(value)


def parse_storage(text: str, source=None) -> dict:
    """``storage.json``: ``{"mounts": {point: {"fstab", "mounted"}}, "exports": [...], "server_running"}``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"not JSON ({exc})", source) from exc
    if not isinstance(data, dict) or set(data) != {"mounts", "exports", "server_running"}:
        raise ParseError("expected an object with exports, mounts, server_running", source)
    if not isinstance(data["mounts"], dict) or not isinstance(data["exports"], list) \
            or not isinstance(data["server_running"], bool):
        raise ParseError("mounts must be an object, exports a list, server_running a boolean", source)
    mounts = {}
    for point, entry in data["mounts"].items():
        if not isinstance(entry, dict) or set(entry) != {"fstab", "mounted"}:
            raise ParseError(f"mount {point!r} must be an object with fstab and mounted", source)
        mounts[point] = {k: _entry(entry[k], f"{point}.{k}", source) for k in ("fstab", "mounted")}
    exports = []
    for item in data["exports"]:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str) \
                or item.get("server") not in (KERNEL_SERVER, GANESHA) or not isinstance(item.get("clients"), list):
            raise ParseError(f"export {item!r} must be {{path, server, clients}}", source)
        exports.append({"path": item["path"], "server": item["server"], "clients": [str(c) for c in item["clients"]]})
    return {"mounts": mounts, "exports": exports, "server_running": data["server_running"]}


def storage_components(section: dict) -> dict:
    """Components of the storage facts: ``storage.<mount point>.mounted``
    (true/false), ``.fstype`` and ``.server`` (of the live mount, absent when
    nothing is mounted there) and ``.fstab`` (the configured entry:
    "source fstype options"). Exports are facts only: they exist on the
    server alone, so they would drift by design."""
    out = {}
    for point, entry in sorted((section.get("mounts") or {}).items()):
        live, configured = entry.get("mounted"), entry.get("fstab")
        out[f"storage.{point}.mounted"] = live is not None
        if live:
            out[f"storage.{point}.fstype"] = live["fstype"]
            out[f"storage.{point}.server"] = live["source"]
        if configured:
            out[f"storage.{point}.fstab"] = " ".join(configured[k] for k in _ENTRY_FIELDS)
    return out
