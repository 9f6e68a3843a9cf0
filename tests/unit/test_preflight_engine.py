"""The preflight engine's own steps: argument specs one variable at a time, secrets never shown."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem, report

OPTIONS = {
    "nccl_fabric": {"type": "str", "choices": ["ethernet", "roce", "infiniband"], "default": "ethernet"},
    "nccl_socket_nthreads": {"type": "int"},
    "base_ntp_servers": {"type": "list", "elements": "str"},
}


def test_each_invalid_value_is_a_problem_naming_its_variable_and_the_valid_ones_are_converted():
    values, problems = engine.validate("dp1", OPTIONS, {
        "nccl_fabric": "omnipath", "nccl_socket_nthreads": "4", "base_ntp_servers": ["ntp.example.com"],
        "unrelated": "kept out"})
    assert values == {"nccl_socket_nthreads": 4, "base_ntp_servers": ["ntp.example.com"]}
    assert problems == [Problem("nccl_fabric", "omnipath",
                                "value of nccl_fabric must be one of: ethernet, roce, infiniband, got: omnipath", "dp1")]


def test_a_value_that_cannot_be_converted_says_why_without_the_validator_s_preamble():
    _values, (problem,) = engine.validate("dp2", OPTIONS, {"nccl_socket_nthreads": "many"})
    assert problem.variable == "nccl_socket_nthreads" and problem.node == "dp2"
    assert problem.allowed.startswith("we were unable to convert to int"), problem.allowed


def test_a_variable_left_unset_is_not_validated():
    assert engine.validate("dp1", OPTIONS, {}) == ({}, [])


def test_secret_values_are_never_shown_in_the_report():
    hidden = engine.secrets(["gpustack"])
    assert {"gpustack_token", "gpustack_database_url"} <= hidden
    token = "Secret0123456789\nserver_url: x"
    problems = engine.redact([Problem("gpustack_token", token, f"'{token}' is not one line", "dk2"),
                              Problem("nccl_fabric", "omnipath", "not a fabric", "dk2")], hidden)
    assert problems == [Problem("gpustack_token", "(not shown)", "'***' is not one line", "dk2"),
                        Problem("nccl_fabric", "omnipath", "not a fabric", "dk2")]
    assert token not in report(problems)


def test_the_gpu_roles_see_only_the_gpu_group_s_nodes():
    ctx = Context(hosts=["head", "g1", "g2"], groups={"all": ["head", "g1", "g2"], "gpu": ["g1", "g2"]}, values={})
    assert engine.role_context(ctx, "nccl", "gpu").hosts == ["g1", "g2"]
    assert engine.role_context(ctx, "base", "gpu").hosts == ["head", "g1", "g2"]


def test_every_role_with_rules_has_a_preflight_spec_and_rules_that_are_functions():
    for role in engine.ENGINE_ROLES:
        module = engine.rules(role)
        assert engine.spec_options(role), role
        assert module.RULES and all(callable(rule) for rule in module.RULES), role
    assert engine.rules("nvidia_repo") is None and engine.rules("preflight") is None


def test_every_role_of_the_collection_with_variables_is_checked_by_the_engine():
    """A new role with an argument spec gets rules (or is named here as one that needs none)."""
    # The contract (its rules are cluster.py's), the repository and preflight helpers, and the roles that
    # only read the nodes (verify, nccl_health, rolling: Ansible validates their specs when they start).
    without_rules = {"apt_repo", "cluster", "nvidia_repo", "preflight", "rolling", "verify", "nccl_health"}
    roles = {path.parent.parent.name for path in engine.ROLES_DIR.glob("*/meta/argument_specs.yml")}
    assert roles - without_rules == set(engine.ENGINE_ROLES)
