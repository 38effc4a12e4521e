"""What every `make bench` section shares: the row format and the main-loop stall probe."""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]

# Ticks of a 5 ms timer whose callback runs on Neovim's main loop (vim.schedule_wrap):
# a gap between ticks is time in which Neovim could not have handled a key either.
STALL_PROBE = """
local last, worst = vim.uv.hrtime(), 0
_G.bench_stall = function() return worst / 1e6 end
_G.bench_stall_reset = function() worst = 0; last = vim.uv.hrtime() end
vim.uv.new_timer():start(0, 5, vim.schedule_wrap(function()
  local now = vim.uv.hrtime()
  worst = math.max(worst, now - last)
  last = now
end))
"""


def row(name: str, value: float, unit: str, target: str, ok: bool) -> Row:
    return {"name": name, "value": value, "unit": unit, "target": target, "ok": ok}
