# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/etc/nccl.conf``, the one owner of its format: check the settings Lockstep
writes into it (``check_settings``), render it (``render``) and read it back
(``parse_nccl_conf``, for gpu_facts).

NCCL reads ``/etc/nccl.conf`` as ``KEY=VALUE`` lines and silently ignores
what it does not know, so a misspelt key or a value NCCL cannot use is only
noticed when a job runs slowly or hangs. ``check_settings`` refuses, with a
message naming each, unknown ``NCCL_`` keys, values of the wrong form, and
interface or HCA names that do not exist on the node.

The table of known variables follows NCCL's documentation ("Environment
Variables", https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html,
2.18 to 2.23). Standard library only.
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import encode, printable
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError

_LEVELS = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")

# kind, argument: what check_settings accepts for each documented variable.
#   bool        0 or 1
#   int         an integer in [low, high] (None: unbounded)
#   enum        one of the listed words (case-insensitive, as NCCL reads them)
#   level       a path type (LOC, NVL, PIX, PXB, PHB, SYS) or 0..5
#   ifname      interface list: [^][=]prefix[,prefix...] (NCCL_SOCKET_IFNAME)
#   hca         HCA list: [^][=]hca[:port][,...] (NCCL_IB_HCA)
#   path        an absolute path
#   text        any single-line text
KNOWN = {
    # system configuration
    "NCCL_SOCKET_IFNAME": ("ifname", None),
    "NCCL_SOCKET_FAMILY": ("enum", ("AF_INET", "AF_INET6")),
    "NCCL_SOCKET_NTHREADS": ("int", (1, 16)),
    "NCCL_NSOCKS_PERTHREAD": ("int", (1, 64)),
    "NCCL_CROSS_NIC": ("int", (0, 2)),
    "NCCL_IB_HCA": ("hca", None),
    "NCCL_IB_TIMEOUT": ("int", (1, 31)),
    "NCCL_IB_RETRY_CNT": ("int", (0, 7)),
    "NCCL_IB_GID_INDEX": ("int", (-1, 255)),
    "NCCL_IB_ADDR_FAMILY": ("enum", ("AF_INET", "AF_INET6")),
    "NCCL_IB_ADDR_RANGE": ("text", None),
    "NCCL_IB_ROCE_VERSION_NUM": ("int", (1, 2)),
    "NCCL_IB_SL": ("int", (0, 15)),
    "NCCL_IB_TC": ("int", (0, 255)),
    "NCCL_IB_FIFO_TC": ("int", (0, 255)),
    "NCCL_IB_RETURN_ASYNC_EVENTS": ("bool", None),
    "NCCL_IB_PCI_RELAXED_ORDERING": ("int", (0, 2)),
    "NCCL_IB_ADAPTIVE_ROUTING": ("bool", None),
    "NCCL_IB_AR_THRESHOLD": ("int", (0, None)),
    "NCCL_IB_QPS_PER_CONNECTION": ("int", (1, 128)),
    "NCCL_IB_SPLIT_DATA_ON_QPS": ("bool", None),
    "NCCL_IB_DISABLE": ("bool", None),
    "NCCL_IB_MERGE_VFS": ("bool", None),
    "NCCL_IB_MERGE_NICS": ("bool", None),
    "NCCL_IB_ECE_ENABLE": ("bool", None),
    "NCCL_IB_CUDA_SUPPORT": ("bool", None),
    "NCCL_OOB_NET_ENABLE": ("bool", None),
    "NCCL_OOB_NET_IFNAME": ("ifname", None),
    "NCCL_UID_STAGGER_THRESHOLD": ("int", (0, None)),
    "NCCL_UID_STAGGER_RATE": ("int", (0, None)),
    "NCCL_NET": ("text", None),
    "NCCL_NET_PLUGIN": ("text", None),
    "NCCL_TUNER_PLUGIN": ("text", None),
    "NCCL_PROFILER_PLUGIN": ("text", None),
    "NCCL_IGNORE_CPU_AFFINITY": ("bool", None),
    "NCCL_CONF_FILE": ("path", None),
    "NCCL_DEBUG": ("enum", ("VERSION", "WARN", "INFO", "TRACE")),
    "NCCL_DEBUG_FILE": ("path", None),
    "NCCL_DEBUG_SUBSYS": ("text", None),
    "NCCL_COLLNET_ENABLE": ("bool", None),
    "NCCL_COLLNET_NODE_THRESHOLD": ("int", (0, None)),
    "NCCL_TOPO_FILE": ("path", None),
    "NCCL_TOPO_DUMP_FILE": ("path", None),
    "NCCL_SET_THREAD_NAME": ("bool", None),
    "NCCL_NET_GDR_LEVEL": ("level", None),
    "NCCL_NET_GDR_READ": ("bool", None),
    "NCCL_NET_SHARED_BUFFERS": ("bool", None),
    "NCCL_NET_SHARED_COMMS": ("bool", None),
    "NCCL_NET_DISABLE_INTRA": ("bool", None),
    "NCCL_NET_FORCE_FLUSH": ("bool", None),
    "NCCL_SINGLE_RING_THRESHOLD": ("int", (0, None)),
    "NCCL_LL_THRESHOLD": ("int", (0, None)),
    "NCCL_TREE_THRESHOLD": ("int", (0, None)),
    "NCCL_ALGO": ("text", None),
    "NCCL_PROTO": ("text", None),
    "NCCL_P2P_DISABLE": ("bool", None),
    "NCCL_P2P_LEVEL": ("level", None),
    "NCCL_P2P_DIRECT_DISABLE": ("bool", None),
    "NCCL_P2P_PXN_LEVEL": ("int", (0, 2)),
    "NCCL_PXN_DISABLE": ("bool", None),
    "NCCL_P2P_NET_CHUNKSIZE": ("int", (1, None)),
    "NCCL_P2P_NVL_CHUNKSIZE": ("int", (1, None)),
    "NCCL_P2P_PCI_CHUNKSIZE": ("int", (1, None)),
    "NCCL_P2P_LL_THRESHOLD": ("int", (0, None)),
    "NCCL_SHM_DISABLE": ("bool", None),
    "NCCL_SHM_USE_CUDA_MEMCPY": ("bool", None),
    "NCCL_SHM_MEMCPY_MODE": ("int", (1, 3)),
    "NCCL_SHM_LOCALITY": ("int", (1, 2)),
    "NCCL_BUFFSIZE": ("int", (1, None)),
    "NCCL_NTHREADS": ("enum", ("64", "128", "256", "512")),
    "NCCL_MAX_NCHANNELS": ("int", (1, 64)),
    "NCCL_MIN_NCHANNELS": ("int", (1, 64)),
    "NCCL_MAX_NRINGS": ("int", (1, 64)),
    "NCCL_MIN_NRINGS": ("int", (1, 64)),
    "NCCL_MAX_CTAS": ("int", (1, 64)),
    "NCCL_MIN_CTAS": ("int", (1, 64)),
    "NCCL_CGA_CLUSTER_SIZE": ("int", (0, 8)),
    "NCCL_CHECKS_DISABLE": ("bool", None),
    "NCCL_CHECK_POINTERS": ("bool", None),
    "NCCL_LAUNCH_MODE": ("enum", ("PARALLEL", "GROUP")),
    "NCCL_CUMEM_ENABLE": ("bool", None),
    "NCCL_NVLS_ENABLE": ("int", (0, 2)),
    "NCCL_NVB_DISABLE": ("bool", None),
    "NCCL_MNNVL_ENABLE": ("int", (0, 2)),
    "NCCL_GRAPH_REGISTER": ("bool", None),
    "NCCL_GRAPH_MIXING_SUPPORT": ("bool", None),
    "NCCL_LOCAL_REGISTER": ("bool", None),
    "NCCL_LEGACY_CUDA_REGISTER": ("bool", None),
    "NCCL_DMABUF_ENABLE": ("bool", None),
    "NCCL_GDRCOPY_ENABLE": ("bool", None),
    "NCCL_GDRCOPY_FLUSH_ENABLE": ("bool", None),
    "NCCL_GDRCOPY_SYNC_ENABLE": ("bool", None),
    "NCCL_SET_STACK_SIZE": ("bool", None),
    "NCCL_RUNTIME_CONNECT": ("bool", None),
    "NCCL_WORK_FIFO_DEPTH": ("int", (1, None)),
    "NCCL_COMM_BLOCKING": ("bool", None),
    "NCCL_RAS_ENABLE": ("bool", None),
    "NCCL_PROXY_PROFILE": ("path", None),
}

_KEY_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_INT_RE = re.compile(r"^-?\d+$")


def normalize(settings):
    """``{KEY: value}`` with every value as NCCL reads it (a string).

    ``None`` and ``""`` drop the key (not written); booleans become ``1`` or
    ``0``; numbers become their decimal form.
    """
    result = {}
    for key, value in (settings or {}).items():
        if value is None or (isinstance(value, str) and value.strip() == ""):
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        result[str(key)] = str(value).strip()
    return result


def _split_list(value):
    """``^=eth0,eth1`` -> (exclude, [(exact, name), ...]).

    As NCCL parses it: a leading ``^`` excludes, then a leading ``=`` makes
    every name of the list an exact name instead of a prefix.
    """
    exclude = value.startswith("^")
    body = value[1:] if exclude else value
    exact = body.startswith("=")
    body = body[1:] if exact else body
    return exclude, [(exact, part) for part in body.split(",")]


def _check_ifname(key, value, interfaces):
    problems = []
    exclude, items = _split_list(value)
    for exact, name in items:
        if not re.match(r"^[A-Za-z0-9_.:@-]+$", name):
            problems.append("%s=%s: %r is not an interface name or prefix" % (key, value, name))
            continue
        if exclude or interfaces is None:
            continue
        found = name in interfaces if exact else any(i.startswith(name) for i in interfaces)
        if not found:
            problems.append(
                "%s=%s: no interface %s %r on this node (it has: %s)"
                % (key, value, "named" if exact else "starting with", name,
                   ", ".join(sorted(interfaces)) or "none")
            )
    return problems


def _check_hca(key, value, hcas):
    """``hcas``: {name: [port numbers]} found on the node, or None (not checked)."""
    problems = []
    exclude, items = _split_list(value)
    for exact, item in items:
        match = re.match(r"^([A-Za-z0-9_.-]+)(?::(\d+))?$", item)
        if match is None:
            problems.append("%s=%s: %r is not an HCA name[:port]" % (key, value, item))
            continue
        if exclude or hcas is None:
            continue
        name, port = match.group(1), match.group(2)
        names = [h for h in hcas if (h == name if exact else h.startswith(name))]
        if not names:
            problems.append(
                "%s=%s: no HCA %s %r on this node (it has: %s)"
                % (key, value, "named" if exact else "starting with", name,
                   ", ".join(sorted(hcas)) or "none")
            )
        elif port is not None and not any(int(port) in hcas[h] for h in names):
            problems.append(
                "%s=%s: HCA %s has no port %s on this node (ports: %s)"
                % (key, value, name, port,
                   ", ".join(str(p) for h in names for p in sorted(hcas[h])) or "none")
            )
    return problems


def _check_value(key, value, interfaces, hcas):
    kind, arg = KNOWN[key]
    if "\n" in value or "\r" in value:
        return ["%s: the value must be one line" % key]
    if kind == "bool":
        if value not in ("0", "1"):
            return ["%s=%s: must be 0 or 1" % (key, value)]
    elif kind == "int":
        if not _INT_RE.match(value):
            return ["%s=%s: must be an integer" % (key, value)]
        low, high = arg
        number = int(value)
        if (low is not None and number < low) or (high is not None and number > high):
            return ["%s=%s: must be between %s and %s" % (key, value, low, "any" if high is None else high)]
    elif kind == "enum":
        if value.upper() not in arg:
            return ["%s=%s: must be one of %s" % (key, value, ", ".join(arg))]
    elif kind == "level":
        if value.upper() not in _LEVELS and not re.match(r"^[0-5]$", value):
            return ["%s=%s: must be one of %s or 0-5" % (key, value, ", ".join(_LEVELS))]
    elif kind == "path":
        if not value.startswith("/"):
            return ["%s=%s: must be an absolute path" % (key, value)]
    elif kind == "ifname":
        return _check_ifname(key, value, interfaces)
    elif kind == "hca":
        return _check_hca(key, value, hcas)
    return []


def check_settings(settings, interfaces=None, hcas=None):
    """Problems of an nccl.conf mapping, as messages naming key and value.

    ``settings`` is normalized first (see ``normalize``). ``interfaces`` is
    the node's interface names and ``hcas`` its HCAs as ``{name: [ports]}``;
    ``None`` skips that existence check. An empty list means no problem.
    """
    problems = []
    values = normalize(settings)
    for key in sorted(values):
        if not _KEY_RE.match(key):
            problems.append("%r is not an environment variable name" % key)
        elif key not in KNOWN:
            problems.append(
                "%s is not an NCCL variable Lockstep knows (NCCL ignores unknown keys "
                "silently; check the spelling against NCCL's documentation)" % key
                if key.startswith("NCCL_") else
                "%s: only NCCL_ variables belong in nccl.conf" % key
            )
        else:
            problems.extend(_check_value(key, values[key], interfaces, hcas))
    threads = values.get("NCCL_SOCKET_NTHREADS")
    socks = values.get("NCCL_NSOCKS_PERTHREAD")
    if threads and socks and _INT_RE.match(threads) and _INT_RE.match(socks) and int(threads) * int(socks) > 64:
        problems.append(
            "NCCL_SOCKET_NTHREADS=%s x NCCL_NSOCKS_PERTHREAD=%s = %d: NCCL allows at most 64 sockets"
            % (threads, socks, int(threads) * int(socks))
        )
    minc, maxc = values.get("NCCL_MIN_NCHANNELS"), values.get("NCCL_MAX_NCHANNELS")
    if minc and maxc and _INT_RE.match(minc) and _INT_RE.match(maxc) and int(minc) > int(maxc):
        problems.append("NCCL_MIN_NCHANNELS=%s is above NCCL_MAX_NCHANNELS=%s" % (minc, maxc))
    return problems


def render(settings, header=None):
    """The text of nccl.conf: optional ``# `` header lines, then sorted KEY=VALUE lines."""
    lines = ["# " + line if line else "#" for line in (header or "").splitlines()]
    values = normalize(settings)
    lines.extend("%s=%s" % (key, values[key]) for key in sorted(values))
    return "\n".join(lines) + "\n"


def parse_nccl_conf(text: str, source=None) -> dict:
    """``/etc/nccl.conf``: ``sha256`` of the bytes and ``settings``, the
    ``KEY=VALUE`` lines (comments and lines without '=' skipped, as NCCL
    does). ``text`` may carry undecodable bytes as surrogates (see
    :func:`collect_from_dir`); the digest is over the original bytes."""
    if text is None:
        raise ParseError("no input, expected nccl.conf", source)
    settings = {}
    for line in printable(text).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        key, value = stripped.split("=", 1)
        settings[key.strip()] = value.strip()
    return {"sha256": hashlib.sha256(encode(text)).hexdigest(), "settings": settings}
