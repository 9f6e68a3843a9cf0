"""The conda role's preflight rules (plugins/plugin_utils/preflight/conda.py) on hand-built contexts:
the molecule cluster scenario's values pass, each bad value is named with its node, variable and value."""

from __future__ import annotations

import copy

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import conda
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

HOSTS = ["dp1", "dp2", "dp3"]
CHANNELS = ["https://conda.anaconda.org/conda-forge"]
# roles/conda/defaults/main.yml and roles/cluster's conda_channels, as the cluster scenario sees them
# (it declares no environment), converted as the argument spec does.
DEFAULTS = {
    "conda_environments": [],
    "conda_lock_file": "/inventory/conda-lock.yml",
    "conda_pkgs_dir": "/opt/conda/pkgs",
    "conda_fetch_timeout": 30,
    "conda_default_env": "",
    "conda_node_packages": [],
    "conda_cluster_cache": True,
    "conda_cluster_cache_dir": "/inventory/.conda-cache",
    "conda_cluster_cache_mount": "",
    "conda_channels": CHANNELS,
}
# An environment as an admin writes it (molecule/conda's inventory), and as the spec converts it
# (every unset option of the element is added as None, packages and pip default to []).
TRAIN = {"name": "train", "python": "3.11", "packages": ["pip", "packaging ==24.2"], "pip": ["six==1.17.0"]}
CONVERTED = dict(TRAIN, channels=None, pip_index_url=None, pip_find_links=None)


def problems(ctx) -> list[Problem]:
    return [problem for rule in conda.RULES for problem in rule(ctx)]


def lines(ctx) -> list[str]:
    return [problem.line() for problem in problems(ctx)]


def context(values=None, raw=None, hosts=None) -> Context:
    """Every host with the defaults and values; raw (as written) for every host when given."""
    hosts = HOSTS if hosts is None else hosts
    ctx = Context(hosts=list(hosts), groups={"all": list(hosts), "gpu": list(hosts)},
                  values={h: dict(copy.deepcopy(DEFAULTS), **copy.deepcopy(values or {})) for h in hosts})
    ctx.raw = {h: copy.deepcopy(raw) for h in hosts} if raw is not None else {}
    return ctx


def write_lock(tmp_path, envs, **changes) -> str:
    """A lock as scripts/conda-lock writes it for envs (as declared), with changes at its top level."""
    lock = {"format": 2, "environments": {
        env["name"]: {"declared": env, "python": env["python"], "channels": env.get("channels") or CHANNELS,
                      "platform": "linux-64", "conda": [], "pip": {"packages": []}, "sha256": "0" * 64}
        for env in envs}, "installer": {"name": "py-rattler", "version": "0.28.0"}}
    lock.update(changes)
    path = tmp_path / "conda-lock.yml"
    path.write_text(yaml.safe_dump(lock))
    return str(path)


def declared(tmp_path, envs=(TRAIN,), lock_envs=None, **values):
    """A context declaring envs (raw as written, converted by the spec) with a lock solved for lock_envs."""
    envs = list(envs)
    path = write_lock(tmp_path, envs if lock_envs is None else lock_envs)
    converted = [dict({"packages": [], "pip": [], "channels": None, "pip_index_url": None, "pip_find_links": None},
                      **{k: (str(v) if k == "python" else v) for k, v in env.items()}) for env in envs]
    return context(dict({"conda_environments": converted, "conda_lock_file": path}, **values),
                   raw={"conda_environments": envs}), path


def test_the_cluster_scenario_passes():
    assert problems(context()) == []


def test_a_declaration_that_matches_its_lock_passes(tmp_path):
    assert problems(declared(tmp_path)[0]) == []


def test_the_raw_value_is_compared_with_the_lock_not_the_converted_one(tmp_path):
    """Without ctx.raw, the spec's None for unset options does not count as a change."""
    ctx, _lock = declared(tmp_path)
    ctx.raw = {}
    assert problems(ctx) == []


# --- molecule/cluster/tests/test_bad_input.py's conda cases (conda-platform-choice and
# conda-environments-mapping are argument-spec cases: the engine's) ---------------------------------

def test_conda_env_name():
    env = {"name": "train env", "python": "3.11"}
    ctx = context({"conda_environments": [dict(CONVERTED, **env)]}, raw={"conda_environments": [env]})
    allowed = "an environment needs a name of letters, digits, . _ - (starting with a letter or digit)"
    assert problems(ctx) == [Problem("conda_environments[0].name", "train env", allowed, h) for h in HOSTS]
    assert lines(ctx)[0] == f"dp1: conda_environments[0].name is 'train env': {allowed}"


def test_conda_python_3_10_unquoted():
    env = {"name": "train", "python": 3.1}  # python: 3.10 in YAML
    ctx = context({"conda_environments": [dict(CONVERTED, name="train", python="3.1")]},
                  raw={"conda_environments": [env]})
    assert lines(ctx) == [
        f"{h}: conda_environments[train].python is '3.1': a YAML number, not a version: quote it ('3.1', "
        "or '3.10' if you meant that release), since YAML reads 3.10 as 3.1" for h in HOSTS]


def test_conda_default_env_unknown():
    ctx = context({"conda_default_env": "train"})
    assert lines(ctx) == [f"{h}: conda_default_env is 'train': one of the conda_environments names [] or \"\""
                          for h in HOSTS]


def test_conda_without_lock(tmp_path):
    path = str(tmp_path / "conda-lock.yml")
    env = {"name": "train", "python": "3.11"}
    ctx = context({"conda_environments": [dict(CONVERTED, **env, packages=[], pip=[])], "conda_lock_file": path},
                  raw={"conda_environments": [env]})
    assert problems(ctx) == [Problem("conda_lock_file", path, "does not exist on the controller: solve the "
                                     f"environments first with scripts/conda-lock {tmp_path}", h) for h in HOSTS]


# --- one more case per rule -------------------------------------------------------------------

def test_a_whole_number_python_is_a_yaml_number_too():
    env = {"name": "train", "python": 3}
    ctx = context({"conda_environments": [dict(CONVERTED, python="3")]}, raw={"conda_environments": [env]},
                  hosts=["dp1"])
    assert [(p.variable, p.value) for p in problems(ctx)] == [
        ("conda_environments[train].python", 3), ("conda_environments[train].python", "3")]


def test_a_raw_value_that_does_not_line_up_is_ignored():
    """A templated string as written: nothing to tell, and nothing raised."""
    ctx = context({"conda_environments": [CONVERTED]}, raw={"conda_environments": "{{ envs }}"}, hosts=["dp1"])
    assert list(conda._python_numbers(ctx)) == []


def test_python_and_pip_must_be_release_and_pinned():
    env = dict(CONVERTED, python="3", pip=["six>=1.0", "torch==2.1.2"])
    ctx = context({"conda_environments": [env]}, hosts=["dp1"])
    assert list(conda._declarations(ctx)) == [
        Problem("conda_environments[train].python", "3", 'a Python release written as "3.X", e.g. "3.11"', "dp1"),
        Problem("conda_environments[train].pip", "six>=1.0", "pip packages pinned as name==version, e.g. six==1.17.0",
                "dp1")]


def test_odd_values_that_slipped_through_do_not_raise():
    ctx = context({"conda_environments": ["train", {"name": ["x"], "python": None, "pip": "six"}]}, hosts=["dp1"])
    assert [p.variable for p in problems(ctx)] == [
        "conda_environments[1].name", "conda_environments[1].python", "conda_environments[1].pip"]


def test_duplicate_names():
    ctx = context({"conda_environments": [CONVERTED, CONVERTED], "conda_default_env": "train"}, hosts=["dp1"])
    assert list(conda._names(ctx)) == [Problem(
        "conda_environments", ["train", "train"], "environment names must be unique (train declared more than once)",
        "dp1")]


def test_an_invalid_variable_is_the_engines():
    """A value the spec refused is absent: no rule reports it again, nor judges what needs it."""
    ctx = context(hosts=["dp1"])
    del ctx.values["dp1"]["conda_environments"]
    ctx.values["dp1"]["conda_default_env"] = "train"
    ctx.raw = {"dp1": {"conda_environments": {"name": "train", "python": 3.1}}}
    assert problems(ctx) == []


@pytest.mark.parametrize("change, why", [
    ({"python": "3.12"}, "python changed since it was solved"),
    ({"pip": ["six==1.16.0"], "channels": ["file:///nas"]}, "channels, pip changed since it was solved"),
])
def test_a_declaration_changed_since_the_lock(tmp_path, change, why):
    ctx, path = declared(tmp_path, envs=[dict(TRAIN, **change)], lock_envs=[TRAIN])
    assert problems(ctx) == [Problem("conda_lock_file", path, f"does not lock conda_environments train as declared "
                                     f"now ({why}): run scripts/conda-lock {tmp_path}", h) for h in HOSTS]


def test_an_environment_missing_from_the_lock(tmp_path):
    other = dict(TRAIN, name="infer")
    ctx, path = declared(tmp_path, envs=[TRAIN, other], lock_envs=[TRAIN])
    ctx.hosts = ["dp1"]
    assert problems(ctx) == [Problem("conda_lock_file", path, "does not lock conda_environments infer as declared "
                                     f"now (it has no such environment): run scripts/conda-lock {tmp_path}", "dp1")]


def test_conda_channels_changed_since_the_lock(tmp_path):
    ctx, path = declared(tmp_path, conda_channels=["https://mirror/conda-forge"])
    ctx.hosts = ["dp1"]
    assert [p.allowed for p in problems(ctx)] == [
        "does not lock conda_environments train as declared now (it was solved on channels "
        f"['https://conda.anaconda.org/conda-forge'], not ['https://mirror/conda-forge']): "
        f"run scripts/conda-lock {tmp_path}"]


@pytest.mark.parametrize("changes", [{"format": 1}, {"installer": None}, {"environments": []}])
def test_a_lock_of_another_format(tmp_path, changes):
    ctx, path = declared(tmp_path)
    lock = yaml.safe_load((tmp_path / "conda-lock.yml").read_text())
    lock.update(changes)
    lock = {k: v for k, v in lock.items() if v is not None}
    (tmp_path / "conda-lock.yml").write_text(yaml.safe_dump(lock))
    ctx.hosts = ["dp1"]
    assert problems(ctx) == [Problem("conda_lock_file", path, "is not a lock of format 2 with an installer and "
                                     f"environments: solve the environments first with scripts/conda-lock {tmp_path}",
                                     "dp1")]


def test_a_lock_that_is_not_yaml(tmp_path):
    ctx, path = declared(tmp_path)
    (tmp_path / "conda-lock.yml").write_text("format: [2\n")
    ctx.hosts = ["dp1"]
    (problem,) = problems(ctx)
    assert (problem.variable, problem.value, problem.node) == ("conda_lock_file", path, "dp1")
    assert problem.allowed.startswith("cannot be read as YAML (")


def test_the_lock_is_read_once_for_the_nodes_that_share_it(tmp_path, monkeypatch):
    ctx, _lock = declared(tmp_path)
    reads = []
    real = conda._read_lock
    monkeypatch.setattr(conda, "_read_lock", lambda path: reads.append(path) or real(path))
    assert problems(ctx) == [] and len(reads) == 1


def test_the_lock_is_not_compared_with_declarations_it_could_not_be_solved_for(tmp_path):
    """A python written as a number is reported once, not again as a lock mismatch."""
    ctx, _lock = declared(tmp_path, envs=[dict(TRAIN, python=3.1)], lock_envs=[TRAIN])
    assert [p.variable for p in problems(ctx)] == ["conda_environments[train].python"] * 3


def test_a_minimal_declaration_matches_its_lock(tmp_path):
    """The lock records the environment as written: without the packages and pip the spec adds."""
    minimal = {"name": "train", "python": "3.11"}
    ctx, _lock = declared(tmp_path, envs=[minimal])
    assert problems(ctx) == []
    ctx.raw = {}
    assert problems(ctx) == []


def test_a_boolean_python_is_not_a_number_but_not_a_release_either():
    env = {"name": "train", "python": True}
    ctx = context({"conda_environments": [dict(CONVERTED, python="True")]}, raw={"conda_environments": [env]},
                  hosts=["dp1"])
    assert problems(ctx) == [
        Problem("conda_environments[train].python", "True", 'a Python release written as "3.X", e.g. "3.11"', "dp1")]


def test_duplicate_names_are_not_compared_with_the_lock(tmp_path):
    ctx, _lock = declared(tmp_path, envs=[TRAIN, dict(TRAIN, python="3.12")], lock_envs=[TRAIN])
    ctx.hosts = ["dp1"]
    assert [p.variable for p in problems(ctx)] == ["conda_environments"]


def test_the_raw_declaration_is_compared_exactly(tmp_path):
    """pip_index_url: null (no index, to conda-lock) is a change from an unset one (the default index)."""
    ctx, path = declared(tmp_path, envs=[dict(TRAIN, pip_index_url=None)], lock_envs=[TRAIN])
    ctx.hosts = ["dp1"]
    assert problems(ctx) == [Problem("conda_lock_file", path, "does not lock conda_environments train as declared "
                                     f"now (pip_index_url changed since it was solved): run scripts/conda-lock "
                                     f"{tmp_path}", "dp1")]
