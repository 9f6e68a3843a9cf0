# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The train_check role's preflight rules (plugins/plugin_utils/preflight/train_check.py) on hand-built contexts.

GOOD is what the demo inventory's nodes see (it sets no train_check_* variable): roles/train_check/defaults/main.yml
and the cluster contract's train_check_port. The backend and the launcher are the argument spec's choices (the
engine's); molecule/conda's train_check run (train_check_timeout=20) is among the good values.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import train_check
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

ROLES = Path(__file__).resolve().parents[2] / "roles"
NODES = ["dp1", "dp2", "dp3"]
GROUPS = {"all": NODES, "ungrouped": [], "cluster": NODES, "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": NODES}
GOOD = {
    "train_check_env": "train",
    "train_check_prefix": "/opt/conda/envs/train",
    "train_check_timeout": 60,
    "train_check_head_group": "head",
    "train_check_backend": "auto",
    "train_check_launcher": "auto",
    "train_check_dir": "/opt/lockstep/train_check",
    "train_check_environment": {},
    "train_check_port": 29500,
}


def context(**values) -> Context:
    """The demo's context, with values changed on every node (None removes one, as a refused value)."""
    per_host = {host: copy.deepcopy(GOOD) for host in NODES}
    for host in NODES:
        for name, value in values.items():
            if value is None:
                per_host[host].pop(name)
            else:
                per_host[host][name] = value
    return Context(hosts=list(NODES), groups=GROUPS, values=per_host, roles=("train_check",))


def problems(ctx) -> list[Problem]:
    return [problem for rule in train_check.RULES for problem in rule(ctx)]


def every(variable, value, allowed) -> list[Problem]:
    return [Problem(variable, value, allowed, host) for host in NODES]


def test_the_demo_passes():
    assert problems(context()) == []


def test_the_values_are_the_roles_defaults():
    defaults = yaml.safe_load((ROLES / "train_check" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    contract = yaml.safe_load((ROLES / "cluster" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert {k: v for k, v in defaults.items() if k != "train_check_prefix"} == {
        k: v for k, v in GOOD.items() if k not in ("train_check_prefix", "train_check_port")}
    assert contract["train_check_port"] == GOOD["train_check_port"]
    assert set(GOOD) <= set(engine.spec_options("train_check")) | set(engine.spec_options("cluster"))


def test_rules_are_named_after_their_checks():
    assert [rule.__name__ for rule in train_check.RULES] == ["_timeout", "_env"]


@pytest.mark.parametrize("timeout", [1, 20, 3600])
def test_a_timeout_passes(timeout):
    assert problems(context(train_check_timeout=timeout)) == []


@pytest.mark.parametrize("timeout", [0, -5, True, "60"])
def test_a_timeout_that_is_no_positive_number_of_seconds_is_named(timeout):
    assert problems(context(train_check_timeout=timeout)) == every("train_check_timeout", timeout, train_check.TIMEOUT)


@pytest.mark.parametrize("env", ["train", "py3.11_env-2", "0train"])
def test_a_conda_environment_name_passes(env):
    assert problems(context(train_check_env=env)) == []


@pytest.mark.parametrize("env", ["-train", ".train", "train env", "train\n", "../base", "", 5])
def test_a_name_conda_would_not_take_is_named(env):
    assert problems(context(train_check_env=env)) == every("train_check_env", env, train_check.ENV)


def test_refused_values_are_the_specs_problem_only():
    assert problems(context(train_check_port=None, train_check_timeout=None, train_check_env=None)) == []


def test_two_bad_values_are_two_problems_on_every_node_and_the_port_is_the_contract_s():
    found = problems(context(train_check_port=0, train_check_timeout=0, train_check_env="a b"))
    assert sorted((p.variable, p.node) for p in found) == sorted(
        (name, host) for name in ("train_check_timeout", "train_check_env") for host in NODES)
