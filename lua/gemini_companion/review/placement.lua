--- Where a review opens (`diff.open_in_new_tab`, `diff.layout`): a tab of its own, or the
--- current tab beside the agent's window, whose windows and sizes come back as they were when
--- the review's windows close. The review only ever adds windows: the user's windows and the
--- agent's keep their buffers, views and options.
local config = require('gemini_companion.config')
local view = require('gemini_companion.review.view')

local M = {}
local H = {}

--- Show the review and return the window to put the cursor in (the proposal, or the unified
--- preview). `enter`: stay in it; else back in the window the user was in.
---@param review gemini_companion.Review
---@param enter boolean
---@return integer
function M.show(review, enter)
  local options = config.options.diff
  local from = vim.api.nvim_get_current_win()
  local anchor = not options.open_in_new_tab and H.anchor(options.layout) or nil
  review.own_tab = anchor == nil
  local wins ---@type integer[]
  if anchor then
    review.tab = vim.api.nvim_get_current_tabpage()
    review.sizes = H.sizes(review.tab)
    wins = H.beside(review, anchor, options.layout)
  else
    review.sizes = nil
    wins = H.in_new_tab(review, options.layout)
  end
  view.set_headers(review)
  if not enter and vim.api.nvim_win_is_valid(from) then
    vim.api.nvim_set_current_win(from)
  end
  return wins[#wins]
end

--- After the review's windows closed: the current tab's windows get their sizes back, when
--- they are the same windows as before it opened (else the user rearranged them: left alone).
---@param review gemini_companion.Review
function M.restore(review)
  local saved = review.sizes
  review.sizes = nil
  if not saved or not vim.api.nvim_tabpage_is_valid(review.tab) then
    return
  end
  local now, before = vim.tbl_keys(H.sizes(review.tab)), vim.tbl_keys(saved)
  table.sort(now)
  table.sort(before)
  if not vim.deep_equal(now, before) then
    return
  end
  for _ = 1, 2 do -- twice: a resize moves its neighbours, the second pass settles them
    for win, size in pairs(saved) do
      pcall(vim.api.nvim_win_set_width, win, size[1])
      pcall(vim.api.nvim_win_set_height, win, size[2])
    end
  end
end

--- The review's buffers as `layout` shows them: the original then the proposal, or the preview.
---@param review gemini_companion.Review
---@param layout string
---@return integer[]
function H.buffers(review, layout)
  if layout == 'unified' then
    return { require('gemini_companion.review.unified').buffer(review) }
  end
  return { review.original, review.proposal }
end

---@param review gemini_companion.Review
---@param layout string
---@return integer[]
function H.in_new_tab(review, layout)
  local bufs = H.buffers(review, layout)
  -- Buffer numbers only: no path ever goes through an Ex command line.
  vim.cmd('tab sbuffer ' .. bufs[1])
  review.tab = vim.api.nvim_get_current_tabpage()
  local wins = { vim.api.nvim_get_current_win() }
  if bufs[2] then
    -- Not `:sbuffer`: 'switchbuf' could turn that into yet another tab.
    local side = layout == 'vertical' and 'right' or 'below'
    table.insert(wins, vim.api.nvim_open_win(bufs[2], true, { split = side, win = wins[1] }))
    H.diff_mode(wins)
  end
  return wins
end

--- The review's windows split off `anchor`, in the current tab; they share its space evenly.
---@param review gemini_companion.Review
---@param anchor {win: integer, agent: boolean}
---@param layout string
---@return integer[]
function H.beside(review, anchor, layout)
  local vertical = layout ~= 'horizontal'
  -- Beside the user's window; before the agent's when it is the only one, so it stays where it is.
  local first_side = vertical and (anchor.agent and 'left' or 'right') or (anchor.agent and 'above' or 'below')
  local wins = {}
  for i, buf in ipairs(H.buffers(review, layout)) do
    local side = i == 1 and first_side or (vertical and 'right' or 'below')
    local win = i == 1 and anchor.win or wins[#wins]
    table.insert(wins, vim.api.nvim_open_win(buf, true, { split = side, win = win }))
  end
  local shared = vim.list_extend(anchor.agent and {} or { anchor.win }, wins)
  H.share(shared, vertical)
  if #wins == 2 then
    H.diff_mode(wins)
  end
  return wins
end

--- Where in the current tab a review goes: beside the user's file window (the current one, else
--- the last one they were in, else any), else beside the agent's. Nil: a tab of its
--- own, because a window of this tab is in diff mode (the diffs would mix).
---@param layout string
---@return {win: integer, agent: boolean}?
function H.anchor(layout)
  local wins = vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_config(win).relative == ''
  end, vim.api.nvim_tabpage_list_wins(0))
  if layout ~= 'unified' and vim.iter(wins):any(function(win)
    return vim.wo[win].diff
  end) then
    return nil
  end
  local current, previous = vim.api.nvim_get_current_win(), vim.fn.win_getid(vim.fn.winnr('#'))
  for _, win in ipairs({ current, previous, unpack(wins) }) do
    -- A file's window: never a narrow one the user reads from (a tree, a quickfix list, help).
    local buftype = vim.tbl_contains(wins, win) and vim.bo[vim.api.nvim_win_get_buf(win)].buftype
    if buftype == '' or buftype == 'acwrite' then
      return { win = win, agent = false }
    end
  end
  local beside = vim.tbl_contains(wins, current) and current or wins[1]
  return beside and { win = beside, agent = true }
end

--- Give `wins` (side by side, or stacked) an even share of the space they have together.
---@param wins integer[]
---@param vertical boolean
function H.share(wins, vertical)
  local get = vertical and vim.api.nvim_win_get_width or vim.api.nvim_win_get_height
  local set = vertical and vim.api.nvim_win_set_width or vim.api.nvim_win_set_height
  local total = 0
  for _, win in ipairs(wins) do
    total = total + get(win) + 1 -- with its separator
  end
  local each = math.max(1, math.floor(total / #wins) - 1)
  for i = 1, #wins - 1 do
    set(wins[i], each)
  end
end

---@param wins integer[]
function H.diff_mode(wins)
  for _, win in ipairs(wins) do
    vim.api.nvim_win_call(win, function()
      vim.cmd('diffthis')
    end)
  end
end

--- Every non-floating window of `tab` and its size.
---@param tab integer
---@return table<integer, integer[]>
function H.sizes(tab)
  local sizes = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    if vim.api.nvim_win_get_config(win).relative == '' then
      sizes[win] = { vim.api.nvim_win_get_width(win), vim.api.nvim_win_get_height(win) }
    end
  end
  return sizes
end

return M
