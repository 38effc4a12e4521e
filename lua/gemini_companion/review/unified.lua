--- The unified preview (`diff.layout = 'unified'`), for narrow screens: one read-only buffer of
--- `-` (the file) and `+` (the proposal) lines, three lines of context and `@@` headers, as
--- `git diff` shows them. It is a view of the proposal buffer, which stays hidden and is the one
--- text answered: `:w` accepts the proposal exactly as the split layouts would, `:q` rejects it,
--- `do` takes the change under the cursor back (the proposal's lines there become the file's
--- again: the change is then no longer shown), `]c` / `[c` move between changes. The proposal
--- cannot be typed into here: a split layout is for editing it.
local view = require('gemini_companion.review.view')

local M = {}
local H = {}

local CONTEXT = 3

---@class gemini_companion.Hunk One change: `old` lines of the file replaced by `new` lines.
---@field old_before integer File lines before it.
---@field old_count integer
---@field new_before integer Proposal lines before it.
---@field new_count integer

---@class gemini_companion.UnifiedState
---@field hunks gemini_companion.Hunk[]
---@field owner table<integer, integer> Preview line → the hunk its `-`/`+` line belongs to.
---@field first integer? The preview's first `-`/`+` line.

---@type table<integer, gemini_companion.UnifiedState> By the review's handle.
local shown = {}

--- The review's preview buffer (made, filled and mapped the first time).
---@param review gemini_companion.Review
---@return integer
function M.buffer(review)
  if review.unified and vim.api.nvim_buf_is_valid(review.unified) then
    return review.unified
  end
  local buf = view.new_buffer('gemini://unified' .. review.path)
  review.unified = buf
  review.names.unified = vim.api.nvim_buf_get_name(buf)
  vim.bo[buf].buftype = 'acwrite'
  vim.b[buf].gemini_companion_proposal = true -- for auto-save plugins, as the proposal
  vim.b[buf].autosave_disabled = true
  M.render(review)
  vim.bo[buf].syntax = 'diff' -- the `+`/`-`/`@@` colours, without FileType autocommands
  local function map(lhs, desc, fn)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = desc })
  end
  map('do', 'Review: take this change back', function()
    H.take_back(review)
  end)
  map(']c', 'Review: next change', function()
    H.jump(review, 1)
  end)
  map('[c', 'Review: previous change', function()
    H.jump(review, -1)
  end)
  return buf
end

--- Show the proposal as it is now against the file as last read. The preview is the unsaved
--- work (`:qa` stops at it); the hidden proposal is not, so `:wqa` has one buffer to write.
---@param review gemini_companion.Review
function M.render(review)
  local buf = review.unified
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local new = vim.api.nvim_buf_get_lines(review.proposal, 0, -1, false)
  H.draw(review, H.hunks(H.old(review), new))
end

--- The preview's first change line (where the cursor goes when it opens).
---@param review gemini_companion.Review
---@return integer
function M.first_change(review)
  local state = shown[review.handle]
  return state and state.first or 1
end

--- The review is over.
---@param review gemini_companion.Review
function M.forget(review)
  shown[review.handle] = nil
end

--- Fill the preview with `hunks` (the proposal's lines read for the `+` lines only).
---@param review gemini_companion.Review
---@param hunks gemini_companion.Hunk[]
function H.draw(review, hunks)
  local buf = assert(review.unified)
  local state = { hunks = hunks, owner = {} }
  local lines = H.lines(state, H.old(review), function(hunk)
    return vim.api.nvim_buf_get_lines(review.proposal, hunk.new_before, hunk.new_before + hunk.new_count, false)
  end)
  shown[review.handle] = state
  view.set_text(buf, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = not review.done
  vim.bo[review.proposal].modified = false
end

--- The file's lines the preview compares with.
---@param review gemini_companion.Review
---@return string[]
function H.old(review)
  return review.is_new and {} or review.current
end

--- `do`: the proposal's lines of the change at (else below, else above) the cursor become the
--- file's lines again. The other changes stay as they were, shifted: no new diff of the file, so
--- its cost is the preview's, not the file's.
---@param review gemini_companion.Review
function H.take_back(review)
  local state = shown[review.handle]
  local index = state and H.at_cursor(state)
  if not index or review.done then
    return
  end
  local hunk = table.remove(state.hunks, index)
  local back = vim.list_slice(H.old(review), hunk.old_before + 1, hunk.old_before + hunk.old_count)
  vim.api.nvim_buf_set_lines(review.proposal, hunk.new_before, hunk.new_before + hunk.new_count, false, back)
  for i = index, #state.hunks do
    state.hunks[i].new_before = state.hunks[i].new_before + hunk.old_count - hunk.new_count
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  H.draw(review, state.hunks)
  vim.api.nvim_win_set_cursor(0, { math.max(1, math.min(row, vim.api.nvim_buf_line_count(review.unified))), 0 })
end

--- The hunk the cursor is on, else the next one below, else the last one above.
---@param state gemini_companion.UnifiedState
---@return integer?
function H.at_cursor(state)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  if state.owner[row] then
    return state.owner[row]
  end
  local below, above ---@type integer?, integer?
  for line in pairs(state.owner) do
    if line > row and (not below or line < below) then
      below = line
    elseif line < row and (not above or line > above) then
      above = line
    end
  end
  local line = below or above
  return line and state.owner[line]
end

--- `]c` / `[c`: to the first line of the next / previous change.
---@param review gemini_companion.Review
---@param step 1|-1
function H.jump(review, step)
  local state = shown[review.handle]
  if not state then
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local last = vim.api.nvim_buf_line_count(0)
  local line = row + step
  while line >= 1 and line <= last do
    if state.owner[line] and state.owner[line] ~= state.owner[line - 1] then -- a change's first line
      vim.api.nvim_win_set_cursor(0, { line, 0 })
      return
    end
    line = line + step
  end
end

--- The changes between two lists of lines.
---@param old string[]
---@param new string[]
---@return gemini_companion.Hunk[]
function H.hunks(old, new)
  local text = function(lines)
    return #lines == 0 and '' or table.concat(lines, '\n') .. '\n'
  end
  local text_diff = (vim.text and vim.text.diff) or vim.diff
  local found = {}
  for _, h in ipairs(text_diff(text(old), text(new), { result_type = 'indices' }) or {}) do
    local sa, ca, sb, cb = h[1], h[2], h[3], h[4]
    -- With no lines on a side, its start is the line before the change.
    table.insert(found, {
      old_before = ca > 0 and sa - 1 or sa,
      old_count = ca,
      new_before = cb > 0 and sb - 1 or sb,
      new_count = cb,
    })
  end
  return found
end

--- The preview's lines: groups of changes closer than twice the context, each under its header.
---@param state gemini_companion.UnifiedState
---@param old string[]
---@param new fun(hunk: gemini_companion.Hunk): string[] The proposal's lines of a hunk.
---@return string[]
function H.lines(state, old, new)
  local lines, hunks = {}, state.hunks
  local function add(text, owner)
    table.insert(lines, text)
    if owner then
      state.owner[#lines] = owner
      state.first = state.first or #lines
    end
  end
  local i = 1
  while i <= #hunks do
    local j = i
    while j < #hunks and hunks[j + 1].old_before - (hunks[j].old_before + hunks[j].old_count) <= 2 * CONTEXT do
      j = j + 1
    end
    local first, last = hunks[i], hunks[j]
    local from = math.max(0, first.old_before - CONTEXT)
    local to = math.min(#old, last.old_before + last.old_count + CONTEXT)
    local shift = first.new_before - first.old_before
    local new_to = to + (last.new_before + last.new_count) - (last.old_before + last.old_count)
    add(('@@ -%d,%d +%d,%d @@'):format(from + 1, to - from, from + 1 + shift, new_to - from - shift))
    local at = from -- the file's lines shown so far
    for k = i, j do
      local hunk = hunks[k]
      for n = at + 1, hunk.old_before do
        add(' ' .. old[n])
      end
      for n = hunk.old_before + 1, hunk.old_before + hunk.old_count do
        add('-' .. old[n], k)
      end
      for _, line in ipairs(new(hunk)) do
        add('+' .. line, k)
      end
      at = hunk.old_before + hunk.old_count
    end
    for n = at + 1, to do
      add(' ' .. old[n])
    end
    i = j + 1
  end
  return lines
end

return M
