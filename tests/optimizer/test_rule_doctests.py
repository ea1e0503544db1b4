"""The runnable examples in the docstrings of the optimizer rules (engine/optimizer/rules/*.py).

Every rule module must have at least one example, and all of them must pass."""
from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import engine.optimizer.rules as rules_package

MODULES = sorted(p.stem for p in Path(rules_package.__file__).parent.glob("*.py") if p.stem != "__init__")


def test_every_rule_module_is_collected():
    from engine.optimizer import RULES
    assert {rule.__name__ for rule in RULES} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_rule_doctests(name):
    module = importlib.import_module(f"engine.optimizer.rules.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"engine/optimizer/rules/{name}.py has no docstring example"
    assert result.failed == 0, f"{result.failed} of the examples of engine/optimizer/rules/{name}.py failed"
