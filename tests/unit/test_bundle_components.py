"""The lookup lockstep.gpu.bundle_components: saved bundles read on the
controller in one pass give exactly what gpu_facts + components give, and an
unreadable bundle is reported, not a crash."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.lockstep.gpu.plugins.lookup.bundle_components import bundle_components
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import collect_from_dir
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components

BUNDLES = Path(__file__).resolve().parents[1] / "fixtures" / "bundles"


def test_same_components_as_the_module_path():
    result = bundle_components({"a": BUNDLES / "a100-mig", "b": BUNDLES / "a100-mig-ptxas-12.6"})
    assert result["a"] == components(analyse(collect_from_dir(str(BUNDLES / "a100-mig"))))
    assert result["a"]["cuda.ptxas"] == "12.1.105" and result["b"]["cuda.ptxas"] == "12.6.85"


def test_packages_are_reported_as_pkg_components():
    result = bundle_components({"a": BUNDLES / "ci-host"}, packages=["bash"])
    assert "pkg.bash" in result["a"]


def test_an_unreadable_bundle_is_a_collect_error(tmp_path):
    result = bundle_components({"gone": tmp_path / "no-such-bundle"})
    assert set(result["gone"]) == {"collect"}
    assert result["gone"]["collect"]["error"].startswith(f"cannot read the bundle {tmp_path / 'no-such-bundle'}")
