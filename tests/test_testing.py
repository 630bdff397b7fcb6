"""dynalint.testing.assert_compiles: the pytest helper for projects' own tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "verify"


@pytest.mark.torch
def test_assert_compiles_passes_fails_and_explains():
    import torch

    from dynalint.testing import assert_compiles

    sys.path.insert(0, str(FIXTURES))
    try:
        from bad_if import BadIf
        from timing_work import Work
    finally:
        sys.path.remove(str(FIXTURES))
    torch.manual_seed(0)
    result = assert_compiles(Work(), (torch.randn(4, 256),), graphs=1, recompiles=0)
    assert result["graph_count"] == 1
    with pytest.raises(AssertionError) as info:
        assert_compiles(BadIf(), (torch.randn(4, 16),))
    message = str(info.value)
    assert "2 graphs, expected 1" in message and "bad_if.py:14" in message and "Data-dependent branching" in message
    # Static shapes and a second shape: a recompile, with the guard that failed.
    with pytest.raises(AssertionError) as info:
        assert_compiles(Work(), (torch.randn(4, 256),), second_inputs=(torch.randn(6, 256),), dynamic=False)
    assert "1 recompiles, expected at most 0" in str(info.value) and "size mismatch" in str(info.value)
    assert_compiles(Work(), (torch.randn(4, 256),), second_inputs=(torch.randn(6, 256),), dynamic=True)
