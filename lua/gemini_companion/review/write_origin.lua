--- Whose write of a proposal is it? Only the user's own write accepts: typed or mapped (or sent
--- by a UI over RPC) in the proposal's window. Not theirs: `:wall` from another window
--- (aucmd_prepbuf borrows the proposal's window without entering it), a timer, a write nested in
--- another autocommand (`BufLeave ++nested update`), or a plugin's scheduled Lua callback
--- (auto-save's debounced write).
local M = {}

local entered_win ---@type integer? The window the user last entered.
local quitting = false -- inside `:x`, `:wq`, `:xa`, `:wqa` (QuitPre came first)
-- Frames of the review's own Lua between the write and the check: the write's own path.
local REVIEW = debug.getinfo(1, 'S').source:gsub('[^/]*$', '')

--- Where a write of the proposal comes from: nil when it is the user's own, else why not.
---@return string?
function M.why_not_the_users()
  local state = vim.fn.state()
  if state:find('c', 1, true) then
    return 'a timer wrote it'
  end
  local _, autocmds = vim.fn.expand('<stack>'):gsub('Autocommands for', '')
  if autocmds > 1 then
    return 'an autocommand wrote it'
  end
  if not state:find('S', 1, true) then -- not while keys are being processed: RPC or a callback
    for level = 2, 100 do
      local info = debug.getinfo(level, 'S')
      if not info then
        break
      end
      if info.what ~= 'C' and not vim.startswith(info.source, REVIEW) then
        return "a plugin's callback wrote it"
      end
    end
  end
  if quitting then
    return nil
  end
  if vim.fn.win_gettype() == 'autocmd' or (entered_win and vim.api.nvim_get_current_win() ~= entered_win) then
    return 'it was written from another window'
  end
end

--- Follow the window the user is in and the quit commands, in `group`.
---@param group integer
function M.track(group)
  entered_win = vim.api.nvim_get_current_win()
  vim.api.nvim_create_autocmd('WinEnter', {
    group = group,
    callback = function()
      entered_win = vim.api.nvim_get_current_win()
    end,
  })
  vim.api.nvim_create_autocmd('QuitPre', {
    group = group,
    callback = function()
      quitting = true
      vim.schedule(function()
        quitting = false
      end)
    end,
  })
end

return M
