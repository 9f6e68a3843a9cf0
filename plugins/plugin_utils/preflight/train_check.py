# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role train_check (what roles/train_check/tasks/preflight.yml checked in Jinja).

The backend and the launcher are the argument spec's choices, checked by the
engine; the port (the cluster contract's train_check_port) and the timeout
are ints there, so these rules check their ranges, and the environment's name.
"""

from __future__ import annotations

import re

from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# Everything is in the argument specs (the role's and the contract's).
VARIABLES: tuple[str, ...] = ()

# tasks/preflight.yml's '^[A-Za-z0-9][A-Za-z0-9._-]*$', matched whole (a trailing newline is no name).
_ENV = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

TIMEOUT = "must be a number of seconds above 0"
ENV = "must be a conda environment name (letters, digits, . _ -, starting with a letter or a digit)"


def _whole(value) -> bool:
    """An int that is no boolean (the spec takes true for an int; Jinja's regex did not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _timeout(ctx):
    """'train_check_timeout a number of seconds above 0'."""
    for host in ctx.hosts:
        timeout = ctx.var(host, "train_check_timeout")
        if ctx.has(host, "train_check_timeout") and not (_whole(timeout) and timeout > 0):
            yield Problem("train_check_timeout", timeout, TIMEOUT, host)


def _env(ctx):
    """'train_check_env a conda environment name'."""
    for host in ctx.hosts:
        env = ctx.var(host, "train_check_env")
        if ctx.has(host, "train_check_env") and not (isinstance(env, str) and _ENV.fullmatch(env)):
            yield Problem("train_check_env", env, ENV, host)


RULES = (_timeout, _env)
