# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""dockerd's daemon.json: merge Lockstep's settings into an existing file
(keys set by hand survive), render it, read the engine's version and the
options its command line sets. The checks are in docker_daemon_rules; the
docker_daemon_config module uses both on the node, the filter
lockstep.gpu.docker_daemon_problems in the preflight before anything is
installed. Standard library only (managed nodes)."""

from __future__ import annotations

import copy
import json
import re
import shlex

from ansible_collections.lockstep.gpu.plugins.module_utils.docker_daemon_rules import COMMAND_LINE_ONLY, ENGINE_VERSION, NAMED_FLAGS, SHORT_FLAGS


class ConfigError(Exception):
    """The existing daemon.json cannot be read."""


# --------------------------------------------------------------------------
# Merging
# --------------------------------------------------------------------------
def _exec_opt_name(opt) -> str:
    return str(opt).split("=", 1)[0].strip()


def merge_exec_opts(existing: list, managed: list) -> list:
    """exec-opts merged by option name: managed entries replace existing ones
    of the same name in place; the others are kept; new ones are appended."""
    wanted = {}
    for opt in managed:
        wanted[_exec_opt_name(opt)] = opt
    result, placed = [], set()
    for opt in existing:
        name = _exec_opt_name(opt)
        if name in wanted:
            if name not in placed:
                result.append(wanted[name])
                placed.add(name)
        else:
            result.append(opt)
    result.extend(opt for name, opt in wanted.items() if name not in placed)
    return result


def _deep_merge(base: dict, update: dict) -> dict:
    result = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def merge(existing: dict, settings: dict, replace=(), remove=()) -> dict:
    """``existing`` with ``settings`` merged in and ``remove`` taken out."""
    result = copy.deepcopy(existing)
    for key, value in settings.items():
        current = result.get(key)
        if key == "exec-opts" and isinstance(value, list) and isinstance(current, list):
            result[key] = merge_exec_opts(current, value)
        elif key not in replace and isinstance(value, dict) and isinstance(current, dict):
            result[key] = _deep_merge(current, value)
        else:
            result[key] = copy.deepcopy(value)
    for item in remove:
        key, _dot, sub = item.partition(".")
        if not sub:
            result.pop(key, None)
        elif key == "exec-opts" and isinstance(result.get(key), list):
            result[key] = [o for o in result[key] if _exec_opt_name(o) != sub]
        elif isinstance(result.get(key), dict):
            result[key].pop(sub, None)
    return result


def render(config: dict) -> str:
    """How the file is written: sorted keys, two-space indent, final newline."""
    return json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def parse_existing(text: str, path: str = "daemon.json") -> dict:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"the existing {path} is not valid JSON ({exc}); fix or remove it - nothing was changed") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the existing {path} holds a JSON {type(data).__name__}, not an object; nothing was changed")
    return data


# --------------------------------------------------------------------------
# Checks. Each returns a list of messages naming the option.
# --------------------------------------------------------------------------
def parse_engine_version(text: str):
    """``dockerd --version`` ("Docker version 20.10.24+dfsg1, build 5d6db84") -> "20.10.24"."""
    match = ENGINE_VERSION.search(text or "")
    if not match:
        return None
    return ".".join(g for g in match.groups() if g is not None)


def has_validate_flag(version) -> bool:
    """``dockerd --validate`` exists from Docker 23.0 on."""
    if not version:
        return False
    return int(version.split(".")[0]) >= 23


def command_line_keys(execstart: str, environment: dict | None = None) -> set:
    """Configuration keys set by dockerd's command line, from ``systemctl
    show -p ExecStart --value`` (or a plain command line)."""
    match = re.search(r"argv\[\]=(.*?)\s;", execstart)
    line = match.group(1) if match else execstart
    env = environment or {}
    line = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), line)
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    keys = set()
    for word in words[1:]:
        if word.startswith("--"):
            flag = word[2:].split("=", 1)[0]
            keys.add(NAMED_FLAGS.get(flag, flag))
        elif word.startswith("-") and len(word) >= 2:
            for letter in word[1:]:
                if letter in SHORT_FLAGS:
                    keys.add(SHORT_FLAGS[letter])
                    break
    return keys - COMMAND_LINE_ONLY


def environment_file(path: str) -> dict:
    env = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = re.match(r"^\s*(?:export\s+)?(\w+)=(.*)$", line)
                if match:
                    try:
                        value = shlex.split(match.group(2), comments=True)
                    except ValueError:
                        continue
                    env[match.group(1)] = " ".join(value)
    except OSError:
        pass
    return env
