"""A part of docs/cli.md's command table (tests/test_cli_table.py: PARTS): context manifests, configurations, closing and stopping,
from a fresh store, in a file of its own so that it runs beside the table's other parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_table import run_part

pytestmark = pytest.mark.early


def test_manifests_close_and_stop_run_in_order_from_a_fresh_store(tmp_path: Path) -> None:
    run_part(tmp_path, "manifests-close-and-stop")
