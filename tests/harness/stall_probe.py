"""The main-loop stall probe: tests and `make bench` measure a stall the same way."""

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
