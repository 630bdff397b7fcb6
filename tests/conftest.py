import importlib.util

import pytest


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("torch") is not None:
        return
    skip = pytest.mark.skip(reason="torch is not installed (pip install torch, or the `verify` extra)")
    for item in items:
        if "torch" in item.keywords:
            item.add_marker(skip)
