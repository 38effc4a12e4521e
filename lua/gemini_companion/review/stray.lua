--- `gemini://` buffers no review owns (a restored session, a typed name): they have nothing to
--- show, so they go, with their windows and any tab left with nothing else.
local lifecycle = require('gemini_companion.review.lifecycle')

local M = {}

--- A `gemini://` buffer was read: unless a live review owns it, sweep once the read is done.
---@param buf integer
function M.read(buf)
  if M.owned()[buf] then
    return -- a live review's own BufReadCmd handles it
  end
  vim.schedule(M.sweep)
end

--- Wipe `gemini://` buffers no review owns, and tabs left with nothing but them.
function M.sweep()
  local owned = M.owned()
  local function stray(buf)
    return not owned[buf] and vim.api.nvim_buf_get_name(buf):match('^gemini://') ~= nil
  end
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    local wins = vim.api.nvim_tabpage_list_wins(tab)
    local all_stray = vim.iter(wins):all(function(win)
      return stray(vim.api.nvim_win_get_buf(win))
    end)
    if all_stray and #vim.api.nvim_list_tabpages() > 1 then
      pcall(vim.cmd, 'tabclose ' .. vim.api.nvim_tabpage_get_number(tab))
    elseif all_stray then -- the only tab: an empty window takes its place
      vim.api.nvim_set_current_win(wins[1])
      vim.cmd('enew | only')
    end
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if stray(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
end

--- The buffers open reviews own.
---@return table<integer, true>
function M.owned()
  local owned = {}
  for _, review in pairs(lifecycle.reviews) do
    owned[review.proposal], owned[review.original] = true, true
    if review.unified then
      owned[review.unified] = true
    end
  end
  return owned
end

return M
