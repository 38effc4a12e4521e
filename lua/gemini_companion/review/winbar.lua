--- A review's winbars: what its keys do and every warning, on the windows that show a review's
--- buffer only. A window of the user's that showed one (`:b N` there), or a review window now
--- showing another buffer (`:e other` in it), gets its own winbar back.
local M = {}

-- w: variable: `ours`, the winbar we put on the window, and `before`, the window's own before it.
-- Vim keeps window options per buffer in a window: back to the user's buffer (`:b#`), the window
-- has its own winbar again by itself; a buffer new to the window (`:e other`) inherits ours.
local SAVED = 'gemini_companion_winbar'

--- Put `text` (a statusline format) on `win`, keeping the window's own winbar to give back.
---@param win integer
---@param text string
function M.set(win, text)
  local now = vim.api.nvim_get_option_value('winbar', { scope = 'local', win = win })
  local saved = vim.w[win][SAVED]
  if not saved or now ~= saved.ours then
    saved = { before = now }
  end
  saved.ours = text
  vim.api.nvim_set_option_value('winbar', text, { scope = 'local', win = win })
  vim.w[win][SAVED] = saved
end

--- Give `win` its own winbar back, unless it still shows a buffer for which `ours(buf)` holds
--- (or the winbar is not ours any more).
---@param win integer
---@param ours fun(buf: integer): boolean
function M.restore(win, ours)
  local saved = vim.api.nvim_win_is_valid(win) and vim.w[win][SAVED]
  if not saved or ours(vim.api.nvim_win_get_buf(win)) then
    return
  end
  if vim.api.nvim_get_option_value('winbar', { scope = 'local', win = win }) == saved.ours then
    vim.api.nvim_set_option_value('winbar', saved.before, { scope = 'local', win = win })
  end
  vim.w[win][SAVED] = nil
end
--- In `group`: whenever a window changes buffer, give it its winbar back if it left a review.
---@param group integer
---@param ours fun(buf: integer): boolean
function M.track(group, ours)
  vim.api.nvim_create_autocmd('BufWinEnter', {
    group = group,
    callback = function()
      M.restore(vim.api.nvim_get_current_win(), ours)
    end,
  })
end

return M
