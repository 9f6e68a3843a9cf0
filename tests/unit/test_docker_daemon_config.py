"""docker_daemon_config: merging daemon.json and validating it before dockerd sees it.

The dockerd 20.10 verdicts below are what the real daemon did: Debian 12's
docker.io 20.10.24+dfsg1-1+deb12u1+b6 (``dockerd --version``: "Docker
version 20.10.24+dfsg1, build 5d6db84") in a privileged podman container,
each configuration given to ``dockerd --config-file`` either to start it
(start-time errors) or together with ``"max-concurrent-downloads": -1`` so
that it stops after loading (load-time errors). Every key of the module's
option table was checked that way with a value of the wrong JSON type (all
rejected with "json: cannot unmarshal ...") and of the right type (all
accepted), except the two keys noted in test_option_table_types.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.lockstep.gpu.plugins.module_utils import docker_daemon, docker_daemon_rules
from ansible_collections.lockstep.gpu.plugins.modules import docker_daemon_config

MODULE = Path(docker_daemon_config.__file__)
# The module imports its helpers from the collection, as Ansible ships them:
# the folder that holds ansible_collections/lockstep/gpu/plugins/modules/ --
# collections/ in the repository, ansible-test's copy under ansible-test units.
COLLECTIONS = str(MODULE.parents[5])

# Real: `systemctl show -p ExecStart docker.service` of Debian 12's docker.io.
DEBIAN_EXECSTART = (
    "ExecStart={ path=/usr/sbin/dockerd ; argv[]=/usr/sbin/dockerd -H fd:// "
    "--containerd=/run/containerd/containerd.sock $DOCKER_OPTS ; ignore_errors=no ; "
    "start_time=[Wed 2026-12-02 12:09:31 UTC] ; stop_time=[n/a] ; pid=568 ; code=(null) ; status=0/0 }"
)


# --------------------------------------------------------------------------
# merge / render / parse_existing
# --------------------------------------------------------------------------
def test_merge_keeps_keys_it_does_not_manage():
    existing = {"labels": ["site=a"], "max-concurrent-downloads": 7, "log-opts": {"labels": "x"}}
    merged = docker_daemon.merge(existing, {"live-restore": True, "log-opts": {"max-size": "100m"}})
    assert merged == {"labels": ["site=a"], "max-concurrent-downloads": 7, "live-restore": True,
                      "log-opts": {"labels": "x", "max-size": "100m"}}
    assert existing == {"labels": ["site=a"], "max-concurrent-downloads": 7, "log-opts": {"labels": "x"}}


def test_merge_is_recursive_for_runtimes_and_replaces_lists():
    existing = {"runtimes": {"kata": {"path": "/usr/bin/kata-runtime"}}, "registry-mirrors": ["https://old"]}
    settings = {"runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "runtimeArgs": []}},
                "registry-mirrors": ["https://new"]}
    merged = docker_daemon.merge(existing, settings)
    assert sorted(merged["runtimes"]) == ["kata", "nvidia"]
    assert merged["registry-mirrors"] == ["https://new"]


def test_replace_takes_the_managed_dict_whole():
    merged = docker_daemon.merge({"log-opts": {"labels": "x", "max-file": "9"}}, {"log-opts": {"max-file": "3"}},
                                 replace=["log-opts"])
    assert merged["log-opts"] == {"max-file": "3"}


def test_exec_opts_are_merged_by_option_name():
    existing = {"exec-opts": ["native.umask=normal", "native.cgroupdriver=cgroupfs"]}
    merged = docker_daemon.merge(existing, {"exec-opts": ["native.cgroupdriver=systemd"]})
    assert merged["exec-opts"] == ["native.umask=normal", "native.cgroupdriver=systemd"]
    assert docker_daemon.merge({}, {"exec-opts": ["native.cgroupdriver=systemd"]})["exec-opts"] == ["native.cgroupdriver=systemd"]


def test_remove_top_level_nested_and_exec_opt():
    existing = {"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "x"}, "kata": {"path": "y"}},
                "exec-opts": ["native.cgroupdriver=systemd", "native.umask=normal"]}
    merged = docker_daemon.merge(existing, {}, remove=["default-runtime", "runtimes.nvidia",
                                                       "exec-opts.native.cgroupdriver", "not-there", "runtimes.absent"])
    assert merged == {"runtimes": {"kata": {"path": "y"}}, "exec-opts": ["native.umask=normal"]}


def test_render_sorts_keys_and_ends_with_a_newline():
    text = docker_daemon.render({"b": 1, "a": {"z": 1, "y": 2}})
    assert text == '{\n  "a": {\n    "y": 2,\n    "z": 1\n  },\n  "b": 1\n}\n'
    assert docker_daemon.render(json.loads(text)) == text


@pytest.mark.parametrize("text", ["", "  \n"])
def test_an_empty_file_is_an_empty_config(text):
    assert docker_daemon.parse_existing(text) == {}


@pytest.mark.parametrize("text, words", [('{"a": 1,}', "not valid JSON"), ("[1, 2]", "JSON list")])
def test_an_unreadable_file_is_refused_not_overwritten(text, words):
    with pytest.raises(docker_daemon.ConfigError, match=words):
        docker_daemon.parse_existing(text, "/etc/docker/daemon.json")


# --------------------------------------------------------------------------
# dockerd 20.10 rules
# --------------------------------------------------------------------------
GOOD = {
    "data-root": "/var/lib/docker", "live-restore": True, "log-driver": "json-file",
    "log-opts": {"max-size": "100m", "max-file": "3", "compress": "true"},
    "registry-mirrors": ["https://mirror.example.com"], "exec-opts": ["native.cgroupdriver=systemd"],
    "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "runtimeArgs": []}},
    "default-runtime": "nvidia", "labels": ["a=b"], "default-shm-size": "64M",
    "default-ulimits": {"nofile": {"Name": "nofile", "Hard": 65536, "Soft": 65536}},
    "default-address-pools": [{"base": "10.10.0.0/16", "size": 24}], "features": {"buildkit": True},
}

# (configuration, text the error must contain): each one dockerd 20.10 refused
# to load or to start with (its message in the comment).
REJECTED_BY_DOCKERD_20_10 = [
    # the following directives don't match any configuration option: lockstep-sentinel
    ({"lockstep-sentinel": 1}, "'lockstep-sentinel': is not a dockerd 20.10 configuration option"),
    # ... don't match any configuration option: cdi-spec-dirs
    ({"cdi-spec-dirs": ["/etc/cdi"]}, "needs Docker 23 or later"),
    # json: cannot unmarshal string into Go struct field Config.live-restore of type bool
    ({"live-restore": "yes"}, "'live-restore': must be a JSON boolean"),
    # json: cannot unmarshal string into Go struct field Config.max-concurrent-downloads of type int
    ({"max-concurrent-downloads": "3"}, "'max-concurrent-downloads': must be a JSON integer"),
    # json: cannot unmarshal number into Go struct field Config.log-opts of type string
    ({"log-opts": {"max-file": 3}}, "'log-opts.max-file': must be a JSON string"),
    # json: cannot unmarshal string into Go struct field Config.log-opts of type map[string]string
    ({"log-opts": "x"}, "'log-opts': must be a JSON object of strings"),
    # invalid size: "67108864"
    ({"default-shm-size": 67108864}, "'default-shm-size': must be a JSON string"),
    # invalid size: 'lots'
    ({"default-shm-size": "lots"}, "'default-shm-size': 'lots' is not a size"),
    # json: cannot unmarshal string into Go struct field Config.registry-mirrors of type []string
    ({"registry-mirrors": "https://a"}, "'registry-mirrors': must be a JSON list of strings"),
    # failed to start daemon: invalid mirror: path, query, or fragment at end of the URI
    ({"registry-mirrors": ["https://a.example.com/b"]}, "must not have a path"),
    # failed to start daemon: invalid mirror: unsupported scheme "ftp"
    ({"registry-mirrors": ["ftp://a.example.com"]}, "must be an http:// or https:// URL"),
    # failed to start daemon: invalid mirror: unsupported scheme ""
    ({"registry-mirrors": ["a.example.com"]}, "must be an http:// or https:// URL"),
    # configuration validation from file failed: runtime name 'runc' is reserved
    ({"runtimes": {"runc": {"path": "/usr/bin/runc"}}}, "'runtimes.runc': the runtime name 'runc' is reserved"),
    # ... specified default runtime 'nvidia' does not exist
    ({"default-runtime": "nvidia"}, "'default-runtime': runtime 'nvidia' is not defined"),
    # json: cannot unmarshal number into Go struct field Runtime.runtimes.path of type string
    ({"runtimes": {"nvidia": {"path": 3}}}, "'runtimes.nvidia.path': must be a non-empty JSON string"),
    # json: cannot unmarshal string into Go struct field Config.exec-opts of type []string
    ({"exec-opts": "native.cgroupdriver=systemd"}, "'exec-opts': must be a JSON list"),
    # configuration validation from file failed: notanip is not an ip address
    ({"dns": ["notanip"]}, "'dns': entry 0 'notanip' is not an IP address"),
    # invalid IP address: notip
    ({"ip": "notip"}, "'ip': 'notip' is not an IP address"),
    # json: cannot unmarshal string into Go struct field Ulimit.default-ulimits.Soft of type int64
    ({"default-ulimits": {"nofile": {"Name": "nofile", "Hard": 10, "Soft": "a"}}},
     "'default-ulimits.nofile.Soft': must be a JSON integer"),
    # json: cannot unmarshal string into Go struct field Config.default-address-pools of type int
    ({"default-address-pools": [{"base": "10.0.0.0/8", "size": "24"}]}, "'default-address-pools[0].size'"),
    # json: cannot unmarshal string into Go struct field Config.features of type bool
    ({"features": {"buildkit": "yes"}}, "'features.buildkit': must be a JSON boolean"),
    # unable to parse logging level: loud
    ({"log-level": "loud"}, "'log-level': 'loud' is not a log level"),
    # json: cannot unmarshal number into Go struct field Config.debug of type bool
    ({"debug": 1}, "'debug': must be a JSON boolean"),
    # configuration validation from file failed: invalid max concurrent downloads: -1
    ({"max-concurrent-downloads": -1}, "'max-concurrent-downloads': must not be negative"),
    # ... default cgroup namespace mode (bogus) is invalid; use "host" or "private"
    ({"default-cgroupns-mode": "bogus"}, "'default-cgroupns-mode': 'bogus' is invalid"),
    # failed to start daemon: error initializing graphdriver: driver not supported
    ({"storage-driver": "nosuch"}, "'storage-driver': 'nosuch' is not a storage driver"),
    # json: cannot unmarshal string into Go struct field BuilderGCConfig.builder.GC.Enabled of type bool
    # (only the top-level type of builder is checked here)
    ({"builder": "x"}, "'builder': must be a JSON object"),
]


@pytest.mark.parametrize("config, words", REJECTED_BY_DOCKERD_20_10,
                         ids=[json.dumps(c)[:60] for c, _words in REJECTED_BY_DOCKERD_20_10])
def test_what_dockerd_20_10_rejects_is_rejected_naming_the_option(config, words):
    errors = docker_daemon_rules.check_dockerd_20_10(config)
    assert any(words in e for e in errors), errors


# Configurations dockerd 20.10 loaded (and, where noted, started with).
ACCEPTED_BY_DOCKERD_20_10 = [
    {},  # started
    {"exec-opts": ["native.cgroupdriver=systemd"]},  # started, CgroupDriver systemd
    {"live-restore": True},  # started
    {"default-shm-size": "64M"},
    {"registry-mirrors": ["https://a.example.com"]},
    {"runtimes": {"nvidia": {"path": "/nope"}}, "default-runtime": "nvidia"},  # started (fails per container)
    {"log-driver": "json-file", "log-opts": {"max-file": "3", "max-size": "100m", "compress": "true"}},  # started
    {"labels": ["a=b"]},
    {"hosts": ["unix:///tmp/x.sock"]},  # loads; only a -H flag makes it a conflict
    GOOD,
]


@pytest.mark.parametrize("config", ACCEPTED_BY_DOCKERD_20_10, ids=[json.dumps(c)[:60] for c in ACCEPTED_BY_DOCKERD_20_10])
def test_what_dockerd_20_10_accepts_passes(config):
    assert docker_daemon_rules.check_dockerd_20_10(config) == []


WRONG = {"bool": "x", "int": "x", "string": 5, "list": "x", "strmap": {"a": 1}, "features": {"a": "x"},
         "builder": "x", "runtimes": "x", "ulimits": "x", "address-pools": "x"}
RIGHT = {"bool": False, "int": 1, "string": "", "list": [], "strmap": {}, "features": {}, "builder": {},
         "runtimes": {}, "ulimits": {}, "address-pools": []}


@pytest.mark.parametrize("name", sorted(docker_daemon_rules.DOCKERD_20_10))
def test_option_table_types(name):
    # Each wrong value was rejected by dockerd 20.10 as a JSON type error and each
    # right one accepted - except containerd-plugins-namespace and restart, flags
    # without a field in dockerd's Config, which it accepts with any value and
    # ignores (checking their type here is stricter, never looser), and
    # default-shm-size, whose right value is a size such as "64M".
    kind = docker_daemon_rules.DOCKERD_20_10[name]
    assert any(f"'{name}" in e for e in docker_daemon_rules.check_dockerd_20_10({name: WRONG[kind]}))
    right = "64M" if name == "default-shm-size" else RIGHT[kind]
    assert docker_daemon_rules.check_dockerd_20_10({name: right}) == []


@pytest.mark.parametrize("flag, key", [("registry-mirror", "registry-mirrors"), ("label", "labels"),
                                       ("exec-opt", "exec-opts"), ("log-opt", "log-opts")])
def test_a_flag_name_in_the_file_is_named_with_the_right_key(flag, key):
    # dockerd 20.10 accepted {"registry-mirror": [...], "label": [...], "exec-opt": [...]}
    # and silently ignored them: the mirror was never used.
    (error,) = docker_daemon_rules.check_dockerd_20_10({flag: ["x"]})
    assert f"'{flag}'" in error and f"'{key}'" in error


def test_command_line_only_flags_are_refused():
    assert "command-line flag" in docker_daemon_rules.check_dockerd_20_10({"config-file": "/x"})[0]


def test_conflicting_labels():
    errors = docker_daemon_rules.check_dockerd_20_10({"labels": ["a=b", "a=c"]})
    assert errors and "conflicting values for label 'a'" in errors[0]


# --------------------------------------------------------------------------
# Engine-independent checks
# --------------------------------------------------------------------------
def _any(config, keys=(), exists=lambda p: True):
    return docker_daemon_rules.check_any_engine(config, keys, path_exists=exists)


def test_a_directive_also_given_on_the_command_line_is_refused():
    # dockerd 20.10, started with -H unix:///tmp/t.sock and {"hosts": [...]} in the file:
    # "the following directives are specified both as a flag and in the configuration file: hosts"
    keys = docker_daemon.command_line_keys(DEBIAN_EXECSTART)
    errors, _warnings = _any({"hosts": ["tcp://0.0.0.0:2375"], "containerd": "/x.sock",
                              "runtimes": {"nvidia": {"path": "/bin/true"}}}, keys)
    assert [e.split(":")[0] for e in errors] == ["daemon.json option 'containerd'", "daemon.json option 'hosts'"]


def test_command_line_keys_of_real_and_other_units():
    assert docker_daemon.command_line_keys(DEBIAN_EXECSTART) == {"hosts", "containerd"}
    assert docker_daemon.command_line_keys(DEBIAN_EXECSTART, {"DOCKER_OPTS": "--dns 8.8.8.8 -s overlay2 --label=a=b"}) == {
        "hosts", "containerd", "dns", "storage-driver", "labels"}
    assert docker_daemon.command_line_keys("/usr/bin/dockerd --add-runtime nvidia=/x") == {"runtimes"}
    # runtimes from flags and file are merged by dockerd, never a conflict.
    assert _any({"runtimes": {"nvidia": {"path": "/x"}}}, {"runtimes"})[0] == []


def test_relative_data_root_is_refused():
    # dockerd 20.10 with {"data-root": "relative/x"} never came up: it spun at 90 % CPU.
    errors, _warnings = _any({"data-root": "relative/x"})
    assert errors == ["daemon.json option 'data-root': 'relative/x' must be an absolute path"]


def test_unknown_cgroup_driver_is_refused():
    # failed to start daemon: native.cgroupdriver option bogus not supported
    errors, _warnings = _any({"exec-opts": ["native.cgroupdriver=bogus"]})
    assert errors and "native.cgroupdriver 'bogus'" in errors[0]
    assert _any({"exec-opts": ["native.cgroupdriver=cgroupfs", "native.umask=normal"]})[0] == []


@pytest.mark.parametrize("driver, opts, words", [
    # failed to start daemon: failed to set log opts: unknown log opt 'nosuch' for json-file log driver
    ("json-file", {"nosuch": "x"}, "'log-opts.nosuch': unknown log option for the json-file"),
    # ... unknown log opt 'tag' for log driver local
    ("local", {"tag": "x"}, "'log-opts.tag': unknown log option for the local"),
    # ... logger: logging mode not supported: x
    ("json-file", {"mode": "x"}, "'log-opts.mode': 'x' is not a logging mode"),
    # dockerd 20.10 starts with these, but every container then fails to start.
    ("json-file", {"max-size": "lots"}, "'log-opts.max-size': 'lots' is not a positive size"),
    ("json-file", {"max-size": "-1"}, "'log-opts.max-size'"),
    ("json-file", {"max-file": "x"}, "'log-opts.max-file': 'x' is not a whole number"),
    ("json-file", {"max-file": "0"}, "'log-opts.max-file'"),
    ("json-file", {"compress": "maybe"}, "'log-opts.compress'"),
    ("json-file", {"max-file": 3}, "'log-opts.max-file': must be a JSON string"),
])
def test_log_options_the_driver_rejects(driver, opts, words):
    errors, _warnings = _any({"log-driver": driver, "log-opts": opts})
    assert any(words in e for e in errors), errors


def test_log_options_that_work():
    assert _any({"log-opts": {"max-size": "100m", "max-file": "3", "compress": "false", "tag": "{{.Name}}"}})[0] == []
    assert _any({"log-driver": "local", "log-opts": {"max-size": "20m", "mode": "non-blocking"}})[0] == []
    assert _any({"log-driver": "syslog", "log-opts": {"syslog-address": "udp://1.2.3.4:514"}})[0] == []
    assert _any({"log-driver": "grafana/loki-docker-driver:latest"})[0] == []


def test_unknown_log_driver_is_refused():
    # dockerd 20.10 starts with log-driver "nosuch"; every container fails.
    errors, _warnings = _any({"log-driver": "nosuch"})
    assert errors and "'log-driver': 'nosuch' is not a built-in log driver" in errors[0]


def test_missing_default_runtime_binary_is_an_error_other_runtimes_a_warning():
    config = {"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime"},
                                                        "kata": {"path": "kata-runtime"}}}
    errors, warnings = _any(config, exists=lambda p: False)
    assert len(errors) == 1 and "'runtimes.nvidia.path'" in errors[0] and "default runtime" in errors[0]
    assert len(warnings) == 1 and "'runtimes.kata.path'" in warnings[0]
    assert _any(config, exists=lambda p: True) == ([], [])


def test_good_config_passes_everything():
    assert docker_daemon_rules.check_dockerd_20_10(GOOD) == []
    assert _any(GOOD, docker_daemon.command_line_keys(DEBIAN_EXECSTART)) == ([], [])


# --------------------------------------------------------------------------
# Engine version
# --------------------------------------------------------------------------
def test_engine_version_and_validate_flag():
    # Real `dockerd --version` of Debian 12's docker.io.
    assert docker_daemon.parse_engine_version("Docker version 20.10.24+dfsg1, build 5d6db84") == "20.10.24"
    assert not docker_daemon.has_validate_flag("20.10.24")
    # Docker CE numbers its releases 23.0, 24.0, ... (no real output at hand: format only).
    assert docker_daemon.parse_engine_version("Docker version 26.1.4, build xxxxxxx") == "26.1.4"
    assert docker_daemon.has_validate_flag("23.0.0") and docker_daemon.has_validate_flag("26.1.4")
    assert docker_daemon.parse_engine_version("no version here") is None
    assert not docker_daemon.has_validate_flag(None)


# --------------------------------------------------------------------------
# The module as Ansible runs it
# --------------------------------------------------------------------------
def run_module(tmp_path: Path, check: bool = False, path_dirs=(), **args):
    args.setdefault("unit", "")
    payload = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check, _ansible_diff=True,
                                           _ansible_tmpdir=str(tmp_path))}
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(payload))
    env = dict(os.environ, PATH=os.pathsep.join([*map(str, path_dirs), "/usr/bin", "/bin"]),
               PYTHONPATH=os.pathsep.join(filter(None, [COLLECTIONS, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(MODULE), str(args_file)], capture_output=True, text=True,
                          env=env, check=False)
    return json.loads(done.stdout)


def test_module_merges_writes_sorted_and_is_idempotent(tmp_path):
    path = tmp_path / "etc" / "docker" / "daemon.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"max-concurrent-downloads": 7, "live-restore": false}')
    settings = {"live-restore": True, "log-opts": {"max-size": "100m", "max-file": "3"}, "data-root": "/var/lib/docker"}
    first = run_module(tmp_path, path=str(path), settings=settings, engine_version="20.10.24")
    assert first["changed"] and not first.get("failed"), first
    assert first["validated_with"][0] == "lockstep rules for dockerd 20.10"
    assert json.loads(path.read_text()) == {"data-root": "/var/lib/docker", "live-restore": True,
                                            "log-opts": {"max-file": "3", "max-size": "100m"},
                                            "max-concurrent-downloads": 7}
    assert path.read_text() == docker_daemon.render(json.loads(path.read_text()))
    second = run_module(tmp_path, path=str(path), settings=settings, engine_version="20.10.24")
    assert second["changed"] is False, second
    assert [p.name for p in path.parent.iterdir()] == ["daemon.json"]  # no candidate left behind


def test_module_refuses_a_bad_option_and_leaves_the_file_alone(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('{"labels": ["mine=1"]}')
    result = run_module(tmp_path, path=str(path), engine_version="20.10.24",
                        settings={"no-such-option": True, "live-restore": "yes"})
    assert result["failed"] and not result["changed"]
    assert "'live-restore': must be a JSON boolean" in result["msg"]
    assert "'no-such-option': is not a dockerd 20.10 configuration option" in result["msg"]
    assert path.read_text() == '{"labels": ["mine=1"]}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["args.json", "daemon.json"]


def test_module_refuses_invalid_existing_json(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('{"oops": ')
    result = run_module(tmp_path, path=str(path), engine_version="20.10.24", settings={"live-restore": True})
    assert result["failed"] and "not valid JSON" in result["msg"]
    assert path.read_text() == '{"oops": '


def test_module_check_mode_writes_nothing(tmp_path):
    path = tmp_path / "docker" / "daemon.json"
    result = run_module(tmp_path, check=True, path=str(path), engine_version="20.10.24",
                        settings={"live-restore": True})
    assert result["changed"] and not path.parent.exists()
    assert '"live-restore": true' in result["diff"]["after"]


FAKE_DOCKERD = """#!/bin/sh
# Stands in for dockerd >= 23 in this test only.
if [ "$1" = --version ]; then echo "Docker version 26.1.4, build test"; exit 0; fi
if [ "$1" = --validate ]; then
  if grep -q no-such-option "$3"; then
    echo "unable to configure the Docker daemon with file $3: the following directives don't match any configuration option: no-such-option" >&2
    exit 1
  fi
  echo "configuration OK"; exit 0
fi
exit 2
"""


def test_module_uses_dockerd_validate_on_engines_that_have_it(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dockerd").write_text(FAKE_DOCKERD)
    (bin_dir / "dockerd").chmod(0o755)
    path = tmp_path / "daemon.json"
    path.write_text("{}")
    bad = run_module(tmp_path, path_dirs=[bin_dir], path=str(path), settings={"no-such-option": 1})
    assert bad["failed"] and "dockerd --validate rejected" in bad["msg"] and "no-such-option" in bad["msg"]
    assert str(path) + " (candidate)" in bad["msg"]
    assert path.read_text() == "{}"
    # A key only newer engines know is left to them.
    good = run_module(tmp_path, path_dirs=[bin_dir], path=str(path), settings={"cdi-spec-dirs": ["/etc/cdi"]})
    assert good["changed"] and good["validated_with"][0] == "dockerd --validate", good
    assert good["engine_version"] == "26.1.4"
    assert json.loads(path.read_text()) == {"cdi-spec-dirs": ["/etc/cdi"]}
