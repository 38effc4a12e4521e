--- A check run on the main loop every few milliseconds until it says it is done: the one way the
--- plugin waits on something only a look can tell (a CLI's screen, a terminal's answer).
local M = {}

--- Run `check()` every `ms` (scheduled on the main loop) until it returns true.
---@param ms integer
---@param check fun(): boolean?
function M.every(ms, check)
  local timer = assert(vim.uv.new_timer())
  timer:start(ms, ms, function()
    vim.schedule(function()
      if not timer:is_closing() and check() then
        timer:stop()
        timer:close()
      end
    end)
  end)
end

return M
