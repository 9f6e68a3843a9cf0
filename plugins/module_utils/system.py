# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of the small system sources of a bundle: os-release, uname, the
package database (dpkg or rpm), ldconfig -p, the /usr/local/cuda link, docker
info, containerd and nvidia-ctk versions, and the collector's own JSON files
(network interfaces, collect errors). Standard library only (managed nodes).
"""

from __future__ import annotations

import json
import re
import shlex

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError, int_or_none


def need_text(text, what, source):
    if text is None or not text.strip():
        raise ParseError(f"empty input, expected {what}", source)
    return text


def parse_os_release(text: str, source=None) -> dict:
    """``/etc/os-release``: ``{KEY: value}`` with shell quoting undone."""
    text = need_text(text, "os-release KEY=VALUE lines", source)
    values = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", stripped)
        if not match:
            raise ParseError(f"line {number} is not KEY=VALUE: {stripped!r}", source)
        try:
            words = shlex.split(match.group(2))
        except ValueError as exc:
            raise ParseError(f"line {number}: {exc}: {stripped!r}", source) from None
        values[match.group(1)] = " ".join(words)
    if not values:
        raise ParseError("no KEY=VALUE line; not an os-release file", source)
    return values


def parse_uname(text: str, source=None) -> str:
    """``uname -r``: the kernel release."""
    text = need_text(text, "uname -r output", source).strip()
    if len(text.split()) != 1:
        raise ParseError(f"expected one kernel release, got {text[:80]!r}", source)
    return text


def parse_package_list(text: str, source=None) -> dict:
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'``
    (or the rpm equivalent): ``{name: version}`` of installed packages.

    dpkg lists known but not installed packages too (status ``un``, ``rc``);
    only those whose second status letter says installed (``i``, or
    ``W``/``t`` for pending triggers) are kept. rpm's ``(none):`` epoch is
    dropped. A name listed twice (multi-arch) with two versions keeps both,
    joined with ", ".
    """
    text = need_text(text, "package list", source)
    packages = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 3 or not fields[0] or not fields[2].strip():
            raise ParseError(
                f"line {number} is not 'name<TAB>version<TAB>status': {line[:120]!r}", source
            )
        name, version, status = fields[0].strip(), fields[1].strip(), fields[2]
        if len(status) < 2 or status[1] not in "iWt":
            continue
        if version.startswith("(none):"):
            version = version[len("(none):"):]
        old = packages.get(name)
        if old is not None and version not in old.split(", "):
            version = ", ".join(sorted(old.split(", ") + [version]))
        packages[name] = version
    return packages


_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*?)\s*$")


def parse_ldconfig(text: str, source=None) -> dict:
    """``ldconfig -p``: ``{soname: [paths]}``."""
    text = need_text(text, "ldconfig -p output", source)
    libs = {}
    header = False
    for line in text.splitlines():
        if re.match(r"^\d+ libs found in cache", line.strip()):
            header = True
            continue
        match = _LDCONFIG_LINE.match(line)
        if match:
            libs.setdefault(match.group(1), []).append(match.group(3))
    if not libs and not header:
        raise ParseError("no 'name (flags) => path' line; not ldconfig -p output", source)
    return libs


def drop_stale_ldconfig(text: str, exists) -> str:
    """``ldconfig -p`` output without the entries whose file is gone.

    ldconfig's cache outlives a library removed by force (``dpkg --remove
    --force-depends``) until ldconfig runs again, so the cache would still
    show e.g. libnccl.so.2 on a node that has no NCCL. Each dropped entry is
    kept as a ``# stale ...`` comment line, which :func:`parse_ldconfig`
    skips, so a saved bundle still tells what the cache said.
    """
    kept = []
    for line in text.splitlines():
        match = _LDCONFIG_LINE.match(line)
        if match and not exists(match.group(3)):
            kept.append(f"# stale ldconfig cache entry, file gone: {match.group(1)} => {match.group(3)}")
        else:
            kept.append(line)
    return "\n".join(kept) + ("\n" if text.endswith("\n") else "")


def parse_cuda_default(text: str, source=None) -> str:
    """The resolved /usr/local/cuda path."""
    text = need_text(text, "the path /usr/local/cuda points to", source).strip()
    if not text.startswith("/") or "\n" in text:
        raise ParseError(f"expected one absolute path, got {text[:80]!r}", source)
    return text


def parse_docker_info(text: str, source=None) -> dict:
    """``docker info --format '{{json .}}'``."""
    text = need_text(text, "docker info JSON", source)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"docker info output is not JSON ({exc})", source) from None
    if not isinstance(data, dict):
        raise ParseError("docker info JSON is not an object", source)
    server_errors = data.get("ServerErrors")
    if server_errors:
        raise ParseError(f"docker info reports server errors: {server_errors}", source)
    server = data.get("ServerVersion")
    if not isinstance(server, str) or not server.strip():
        raise ParseError(
            "docker info has no ServerVersion (the daemon did not answer)", source
        )
    runtimes = data.get("Runtimes")
    registry = data.get("RegistryConfig")
    mirrors = registry.get("Mirrors") if isinstance(registry, dict) else None
    return {
        "server_version": server.strip(),
        "default_runtime": data.get("DefaultRuntime") or None,
        "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else [],
        "cgroup_driver": data.get("CgroupDriver") or None,
        "cgroup_version": data.get("CgroupVersion") or None,
        "storage_driver": data.get("Driver") or None,
        "registry_mirrors": [str(m) for m in mirrors] if isinstance(mirrors, list) else [],
    }


def parse_containerd_version(text: str, source=None) -> str:
    """``containerd --version``: "containerd <package> <version> <commit>"."""
    text = need_text(text, "containerd --version output", source)
    match = re.search(r"^containerd\s+\S+\s+v?(\d\S*)", text, re.MULTILINE)
    if match is None:
        raise ParseError("no 'containerd <package> <version>' line", source)
    return match.group(1)


def parse_nvidia_ctk_version(text: str, source=None) -> str:
    """``nvidia-ctk --version``: "NVIDIA Container Toolkit CLI version X.Y.Z"."""
    text = need_text(text, "nvidia-ctk --version output", source)
    match = re.search(r"\bversion\s+v?(\d+\.\d+\S*)", text)
    if match is None:
        raise ParseError("no 'NVIDIA Container Toolkit CLI version X.Y.Z' line", source)
    return match.group(1)


def parse_json_object(text, source, what):
    text = need_text(text, what, source)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"{what} is not JSON ({exc})", source) from None
    if not isinstance(data, dict):
        raise ParseError(f"{what} is not a JSON object", source)
    return data


def parse_net_interfaces(text: str, source=None) -> dict:
    """The collector's ``net-interfaces.json``."""
    data = parse_json_object(text, source, "net-interfaces JSON")
    result = {}
    for name, info in data.items():
        if not isinstance(info, dict):
            raise ParseError(f"interface {name!r} is not an object", source)
        result[name] = {
            "mtu": int_or_none(info.get("mtu")),
            "speed_mbps": int_or_none(info.get("speed_mbps")),
            "state": info.get("state"),
            "virtual": bool(info.get("virtual", False)),
        }
    return result


def parse_names(text: str, source=None) -> dict:
    """The collector's ``names.json``: ``{address, address_error, resolves}``."""
    data = parse_json_object(text, source, "names JSON")
    resolves = data.get("resolves")
    if not isinstance(resolves, dict):
        raise ParseError("'resolves' is not an object", source)
    result = {}
    for name, found in resolves.items():
        if isinstance(found, dict) and isinstance(found.get("error"), str):
            result[str(name)] = {"error": found["error"]}
        elif isinstance(found, list) and all(isinstance(a, str) for a in found):
            result[str(name)] = sorted(found)
        else:
            raise ParseError(f"name {name!r}: neither a list of addresses nor an error", source)
    address, error = data.get("address"), data.get("address_error")
    if not (address is None or isinstance(address, str)) or not (error is None or isinstance(error, str)):
        raise ParseError("'address' and 'address_error' must be strings or null", source)
    return {"address": address, "address_error": error, "resolves": result}


def parse_collect_errors(text, source):
    data = parse_json_object(text, source, "collect-errors JSON")
    return {str(k): str(v) for k, v in data.items()}
