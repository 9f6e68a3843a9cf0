"""Every filter of the collection is documented for ansible-doc.

The filters are the names the FilterModule classes of plugins/filter/*.py
return; each has its documentation in plugins/filter/<name>.yml. These tests
run ansible-doc from the repository root, so that ansible.cfg's
collections_path finds this clone as lockstep.gpu, and check that
`ansible-doc -t filter -l lockstep.gpu` lists every filter and none as
UNDOCUMENTED, that each one's documentation renders, and that the options it
documents are the parameters the Python function takes.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
from pathlib import Path

import limits
import pytest

ROOT = Path(__file__).resolve().parents[2]
FILTER_DIR = ROOT / "plugins" / "filter"
PREFIX = "lockstep.gpu."


def _ansible_doc():
    """ansible-doc of the Python running the tests (the repository's .venv under scripts/test)."""
    for candidate in (Path(sys.executable).parent / "ansible-doc", ROOT / ".venv" / "bin" / "ansible-doc"):
        if candidate.exists():
            return str(candidate)
    pytest.skip("no ansible-doc beside this Python or in .venv")


def _env():
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_DEPRECATION_WARNINGS="False")
    for name in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
        env.pop(name, None)  # only the repository's ansible.cfg says where collections are
    return env


def _run(*args):
    proc = limits.run([_ansible_doc(), *args], cwd=ROOT, env=_env(), capture_output=True, text=True,
                      cpu_s=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lockstep.gpu" not in proc.stderr, proc.stderr
    return proc.stdout


def _filters():
    """{filter name: function} of every FilterModule in plugins/filter/."""
    found = {}
    for path in sorted(FILTER_DIR.glob("*.py")):
        module = importlib.import_module(f"ansible_collections.lockstep.gpu.plugins.filter.{path.stem}")
        for name, function in module.FilterModule().filters().items():
            assert name not in found, f"filter {name} is defined twice"
            found[name] = function
    return found


FILTERS = _filters()


@pytest.fixture(scope="module")
def listed():
    text_listing = _run("-t", "filter", "-l", "lockstep.gpu")
    json_listing = json.loads(_run("-t", "filter", "-l", "--json", "lockstep.gpu"))
    return text_listing, json_listing


def _documented(json_listing):
    """The defined filters ansible-doc has documentation for (it fails on any other)."""
    return [PREFIX + name for name in sorted(FILTERS) if json_listing.get(PREFIX + name, "UNDOCUMENTED") != "UNDOCUMENTED"]


@pytest.fixture(scope="module")
def docs(listed):
    names = _documented(listed[1])
    return json.loads(_run("-t", "filter", "--json", *names)) if names else {}


@pytest.fixture(scope="module")
def rendered(listed):
    """The text ansible-doc shows, all documented filters in one run."""
    names = _documented(listed[1])
    return _run("-t", "filter", *names) if names else ""


def test_the_filter_modules_define_filters():
    assert len(FILTERS) >= 20
    assert {"drift", "components", "cuda_driver_check", "version_compare"} <= set(FILTERS)


def test_every_filter_is_listed_and_documented(listed):
    text_listing, json_listing = listed
    assert "UNDOCUMENTED" not in text_listing, text_listing
    assert {name for name, desc in json_listing.items() if desc == "UNDOCUMENTED"} == set()
    assert set(json_listing) == {PREFIX + name for name in FILTERS}
    listed_names = {line.split()[0] for line in text_listing.splitlines() if line.strip()}
    assert listed_names == {PREFIX + name for name in FILTERS}


def test_every_doc_file_belongs_to_a_filter():
    assert {path.stem for path in FILTER_DIR.glob("*.yml")} == set(FILTERS)


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_documentation_renders_from_this_clone(docs, rendered, name):
    assert PREFIX + name in docs, f"ansible-doc has no documentation for {PREFIX}{name} (plugins/filter/{name}.yml)"
    entry = docs[PREFIX + name]
    doc = entry["doc"]
    assert doc["name"] == name
    assert Path(doc["filename"]).resolve() == (FILTER_DIR / f"{name}.yml").resolve()
    assert doc["version_added"] == "0.1.0"
    assert doc["short_description"] and doc["description"]
    assert doc["options"]["_input"]["required"] is True
    assert f"lockstep.gpu.{name}" in entry["examples"]
    assert "_value" in entry["return"]
    assert f"FILTER {PREFIX}{name} (" in rendered


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_documented_options_are_the_function_parameters(docs, name):
    assert PREFIX + name in docs, f"ansible-doc has no documentation for {PREFIX}{name} (plugins/filter/{name}.yml)"
    doc = docs[PREFIX + name]["doc"]
    parameters = list(inspect.signature(FILTERS[name]).parameters.values())[1:]  # the first is _input
    documented = {key: value for key, value in doc["options"].items() if key != "_input"}
    assert set(documented) == {p.name for p in parameters}
    positional = [p.strip() for p in doc.get("positional", "").split(",") if p.strip()]
    assert positional == [p.name for p in parameters]
    for parameter in parameters:
        required = parameter.default is inspect.Parameter.empty
        assert bool(documented[parameter.name].get("required")) == required, parameter.name
