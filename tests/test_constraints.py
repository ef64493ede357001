"""``constraints.txt`` pins every package that ``make`` installs, within pyproject's ranges.

``make`` installs ``.venv`` with ``-c constraints.txt`` (``make lock`` writes it): a
dependency added to ``pyproject.toml`` without ``make lock`` would resolve freshly on every
machine, and one pinned outside its range would fail the install.
"""

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def _installed_requirements() -> list[Requirement]:
    """The core dependencies and the ``dev`` extra (with the extras it names), as ``make``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    requirements = [Requirement(text) for text in project["dependencies"]]
    pending, seen = ["dev"], set()
    while pending:
        extra = pending.pop()
        seen.add(extra)
        for requirement in map(Requirement, extras[extra]):
            if canonicalize_name(requirement.name) == "pmctx":
                pending.extend(e for e in requirement.extras if e not in seen)
            else:
                requirements.append(requirement)
    return requirements


@pytest.mark.parametrize("requirement", _installed_requirements(), ids=str)
def test_each_installed_requirement_is_pinned_within_its_range(requirement):
    pins = _pins()
    name = canonicalize_name(requirement.name)
    assert name in pins, f"{requirement} is not in constraints.txt: run `make lock`"
    assert requirement.specifier.contains(pins[name], prereleases=True), (
        f"constraints.txt pins {name}=={pins[name]}, outside {requirement}: run `make lock`"
    )
