"""What every `make bench` section shares: the row format and the main-loop stall probe.

Imported first by every benchmark: it puts tests/ on the path once, for the harness the
benchmarks drive Neovim with (conftest, harness/, the features' helpers)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness.stall_probe import STALL_PROBE

__all__ = ["STALL_PROBE", "Row", "row"]

Row = dict[str, Any]


def row(name: str, value: float, unit: str, target: str, ok: bool) -> Row:
    return {"name": name, "value": value, "unit": unit, "target": target, "ok": ok}
