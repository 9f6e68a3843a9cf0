"""Role monitoring, outside a cluster: its alert rules under promtool, and
the exporter's code running as the role installs it, without Ansible.

promtool comes from Debian's prometheus package, unpacked by
scripts/bootstrap into .cache/tools/prometheus (LOCKSTEP_PROMTOOL). The
rules are the role's template rendered with the role's defaults (and once
with a drift ignore list), then checked (`promtool check rules`) and
unit-tested (`promtool test rules`, tests/tooling/promtool/*.yml: drift,
stale, and the cases that must not fire).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "monitoring"
PLUGINS = ROOT / "plugins"
PROMTOOL_TESTS = Path(__file__).resolve().parent / "promtool"


def promtool() -> str:
    found = os.environ.get("LOCKSTEP_PROMTOOL") or str(ROOT / ".cache/tools/prometheus/usr/bin/promtool")
    if not Path(found).is_file():
        pytest.fail(f"no promtool at {found}: source scripts/bootstrap, which unpacks it from apt's prometheus")
    return found


def role_vars(**overrides) -> dict:
    """The role's defaults and vars, as Ansible would see them (vars win), with overrides."""
    values = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    values.update(yaml.safe_load((ROLE / "vars/main.yml").read_text()))
    values.update(overrides, ansible_managed="Ansible managed (test render)")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    # The one templated var the rules use.
    values["monitoring_lockstep_drift_selector"] = env.from_string(
        values["monitoring_lockstep_drift_selector"]).render(values).strip()
    return values


def render_rules(directory: Path, **overrides) -> Path:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROLE / "templates"), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    out = directory / "lockstep.rules.yml"
    out.write_text(env.get_template("lockstep.rules.yml.j2").render(role_vars(**overrides)))
    return out


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_the_rules_pass_promtool_check_and_its_unit_tests(tmp_path):
    rules = render_rules(tmp_path)
    checked = run(promtool(), "check", "rules", str(rules))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 2 rules found" in checked.stdout
    shutil.copy(PROMTOOL_TESTS / "lockstep_rules_test.yml", tmp_path)
    tested = run(promtool(), "test", "rules", str(tmp_path / "lockstep_rules_test.yml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_rules_render_the_stale_minutes_and_the_drift_for(tmp_path):
    rules = yaml.safe_load(render_rules(tmp_path, monitoring_lockstep_stale_minutes=30,
                                        monitoring_lockstep_drift_for="0s").read_text())
    by_name = {r["alert"]: r for r in rules["groups"][0]["rules"]}
    assert by_name["LockstepStale"]["expr"] == "time() - lockstep_collection_timestamp_seconds > 1800"
    assert by_name["LockstepDrift"]["for"] == "0s"
    assert "lockstep_component_info)" in by_name["LockstepDrift"]["expr"]


def test_a_component_left_out_does_not_fire_drift(tmp_path):
    rules = render_rules(tmp_path, monitoring_lockstep_drift_ignore=[r"net\.veth.*"])
    assert r'lockstep_component_info{component!~"net\\.veth.*"}' in rules.read_text()
    checked = run(promtool(), "check", "rules", str(rules))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shutil.copy(PROMTOOL_TESTS / "lockstep_rules_ignore_test.yml", tmp_path)
    tested = run(promtool(), "test", "rules", str(tmp_path / "lockstep_rules_ignore_test.yml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_promtool_fails_a_broken_rule(tmp_path):
    """The role's `validate: promtool check rules %s` would refuse it (the check is real)."""
    rules = render_rules(tmp_path, monitoring_lockstep_drift_for="ten minutes")
    checked = run(promtool(), "check", "rules", str(rules))
    assert checked.returncode != 0
    assert "ten minutes" in checked.stdout + checked.stderr


def _imports(path: Path) -> set:
    """The collection's modules a file imports (plugins/<kind>/<name>.py)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ansible_collections.lockstep.gpu."):
            parts = node.module.split(".")
            found.add(f"{parts[4]}/{parts[5]}.py")
    return found


def test_the_code_the_role_copies_is_everything_it_imports():
    listed = yaml.safe_load((ROLE / "vars/main.yml").read_text())["monitoring_lockstep_code"]
    missing = {f"{name} imports {dep}" for name in listed for dep in _imports(PLUGINS / name) if dep not in listed}
    assert missing == set()
    assert {"module_utils/collect.py", "module_utils/analyse.py", "plugin_utils/components.py",
            "plugin_utils/exporter.py"} <= set(listed)


def test_the_copied_code_runs_without_ansible(tmp_path):
    """As the role installs it: the listed files only, run by `python -m`
    with no site-packages (so no Ansible), writing the textfile."""
    lib = tmp_path / "lib"
    listed = yaml.safe_load((ROLE / "vars/main.yml").read_text())["monitoring_lockstep_code"]
    for name in listed:
        target = lib / "ansible_collections/lockstep/gpu/plugins" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PLUGINS / name, target)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(lib)}
    no_ansible = subprocess.run([sys.executable, "-S", "-c", "import ansible"], env=env, capture_output=True,
                                text=True, check=False)
    assert no_ansible.returncode != 0 and "No module named 'ansible'" in no_ansible.stderr
    out = tmp_path / "lockstep.prom"
    done = subprocess.run([sys.executable, "-S", "-m", "ansible_collections.lockstep.gpu.plugins.plugin_utils.exporter",
                           "--output", str(out), "--command-timeout", "30"],
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    if release.get("ID") == "debian":
        assert f'lockstep_component_info{{component="os.release",value="Debian {release["VERSION_ID"].strip(chr(34))}"}} 1' in text
    assert 'lockstep_component_info{component="os.kernel",value="%s"} 1' % os.uname().release in text
    assert "\nlockstep_collection_success 1\n" in text
    # promtool reads it as valid exposition text.
    checked = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_one_find_names_exactly_the_copies_that_differ(tmp_path):
    """The role's check before it copies: ansible.builtin.find of two copies as the role installs them, one
    intact and one edited, stripped of a file and given another mode behind Ansible's back, read by filter
    lockstep.gpu.collection_stale in Ansible. Only the damaged copy's three files are stale."""
    listed = yaml.safe_load((ROLE / "vars/main.yml").read_text())["monitoring_lockstep_code"]
    roots = {}
    for copy in ("intact", "damaged"):
        roots[copy] = tmp_path / copy / "ansible_collections/lockstep/gpu/plugins"
        for name in listed:
            target = roots[copy] / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(PLUGINS / name, target)
            target.chmod(0o644)
    damaged = roots["damaged"]
    with open(damaged / "module_utils/collect.py", "a", encoding="utf-8") as handle:
        handle.write("# edited on the node\n")
    (damaged / "plugin_utils/exporter.py").chmod(0o600)
    (damaged / "module_utils/nccl.py").unlink()
    owner = {"owner": subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip(),
             "group": subprocess.run(["id", "-gn"], capture_output=True, text=True, check=True).stdout.strip()}
    tasks = []
    for copy, root in roots.items():
        tasks += [{"name": f"find {copy}", "ansible.builtin.find": {"paths": str(root), "recurse": True,
                                                                   "get_checksum": True}, "register": copy},
                  {"name": f"stale {copy}", "ansible.builtin.debug": {"msg": "{{ names | lockstep.gpu.collection_stale("
                   f"{copy}.files, '{root}', owner='{owner['owner']}', group='{owner['group']}') | to_json }}}}"}}]
    playbook = tmp_path / "stale.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "vars": {"names": listed},
                                         "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_DEPRECATION_WARNINGS="False")
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The JSON document, between ansible.cfg's profile_tasks lines.
    report, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("{"):])
    results = {task["task"]["name"]: task["hosts"]["localhost"] for task in report["plays"][0]["tasks"]}
    assert json.loads(results["stale intact"]["msg"]) == []
    assert json.loads(results["stale damaged"]["msg"]) == [
        name for name in listed if name in ("module_utils/collect.py", "module_utils/nccl.py", "plugin_utils/exporter.py")]
    assert len(results["find intact"]["files"]) == len(listed)


# --- preflight --------------------------------------------------------------------------------------------------

LOCAL_INVENTORY = {"all": {"children": {"cluster": {"children": {
    "head": {"hosts": {"ctl": {"ansible_connection": "local", "ansible_become": False,
                               "ansible_python_interpreter": sys.executable}}},
    "workers": {"hosts": {}}}}}}}


def preflight(tmp_path: Path, extra: dict, gpu: bool = False) -> tuple:
    """playbooks/preflight.yml (it only reads) for role monitoring, on this machine as the one node (a GPU node
    with ``gpu``)."""
    inventory = json.loads(json.dumps(LOCAL_INVENTORY))
    if gpu:
        inventory["all"]["children"]["gpu"] = {"hosts": {"ctl": {}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "vars.yml").write_text(yaml.safe_dump({"preflight_roles": ["monitoring"], **extra}))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_STDOUT_CALLBACK="default",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_DEPRECATION_WARNINGS="False")
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           "playbooks/preflight.yml", "-e", f"@{tmp_path / 'vars.yml'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def test_the_preflight_passes_the_defaults(tmp_path):
    rc, output = preflight(tmp_path, {})
    assert rc == 0, output[-3000:]
    assert "TASK [lockstep.gpu.preflight : Check the whole inventory, naming every problem at once]" in output


# One run, every bad value named in its one report (the rules: plugins/plugin_utils/preflight/monitoring.py;
# the ports: the contract's, cluster.py).
BAD = {
    "monitoring_prometheus_port": (70000, "monitoring_prometheus_port is '70000': not a port of Prometheus: "
                                          "a port is a whole number from 1 to 65535"),
    "monitoring_node_exporter_port": (0, "monitoring_node_exporter_port is '0': not a port of"),
    "monitoring_scrape_interval": ("15 seconds", "monitoring_scrape_interval is '15 seconds': it must be a "
                                                 "Prometheus duration, a number and a unit"),
    "monitoring_prometheus_retention": ("forever", "monitoring_prometheus_retention is 'forever': it must be a "
                                                   "Prometheus duration"),
    "monitoring_server_group": ("monitors", "monitoring_server_group is 'monitors': a group without a node in the "
                                            "inventory"),
    "monitoring_lockstep_interval_minutes": (20, "monitoring_lockstep_stale_minutes is '15': it must be a whole "
                                                 "number of minutes, more than monitoring_lockstep_interval_minutes "
                                                 "(20)"),
}
# On a GPU node: the DCGM exporter's values are checked before NVIDIA's repository is (which these runs never reach).
BAD_DCGM = {
    "monitoring_dcgm_exporter_port": (99999, "monitoring_dcgm_exporter_port is '99999': not a port of"),
    "monitoring_dcgm_exporter_version": ("latest", "monitoring_dcgm_exporter_version is 'latest': it must be a "
                                                   "Debian package version"),
    "monitoring_dcgm_exporter_collectors": (
        [{"field": "GPU_UTIL", "type": "gauge", "help": "x"},
         {"field": "DCGM_FI_DEV_GPU_UTIL", "type": "histogram", "help": "x"}],
        "monitoring_dcgm_exporter_collectors[0].field is 'GPU_UTIL': not a DCGM field"),
}


def test_the_preflight_names_every_bad_value_in_one_report(tmp_path):
    rc, output = preflight(tmp_path, {name: value for name, (value, _) in BAD.items()})
    assert rc != 0
    assert f"{len(BAD)} problems in the inventory; no node was changed" in output, output[-3000:]
    for _, message in BAD.values():
        assert message in output, (message, output[-3000:])


def test_the_preflight_names_every_bad_dcgm_value_on_a_gpu_node(tmp_path):
    rc, output = preflight(tmp_path, {name: value for name, (value, _) in BAD_DCGM.items()}, gpu=True)
    assert rc != 0
    for _, message in BAD_DCGM.values():
        assert message in output, (message, output[-3000:])
    assert "monitoring_dcgm_exporter_collectors[1].type is 'histogram'" in output, output[-3000:]


def test_the_preflight_checks_nothing_of_monitoring_where_it_is_left_out(tmp_path):
    rc, output = preflight(tmp_path, {"monitoring_enabled": False, "monitoring_lockstep_interval_minutes": 20,
                                      "monitoring_server_group": "monitors",
                                      "monitoring_dcgm_exporter_version": "latest"}, gpu=True)
    assert rc == 0, output[-3000:]
