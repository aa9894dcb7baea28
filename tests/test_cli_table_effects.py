"""A part of docs/cli.md's command table (tests/test_cli_table.py: PARTS): effects, approvals and their attempts,
from a fresh store, in a file of its own so that it runs beside the table's other parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_table import run_part

pytestmark = pytest.mark.early


def test_effects_and_approvals_run_in_order_from_a_fresh_store(tmp_path: Path) -> None:
    run_part(tmp_path, "effects-and-approvals")
