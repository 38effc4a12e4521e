--- Shares what the user sees with connected clients: the files they work in (most recently
--- focused first), the cursor and the selection in the active file.
---
--- Cost model: autocommand callbacks only start a timer when none is pending (cursor motions
--- are listened to once per window); the state is computed once per debounce window and sent
--- with one async notification, only when it changed.
local config = require('gemini_companion.config')
local host = require('gemini_companion.host')

local api, uv = vim.api, vim.uv

local M = {}

local VISUAL = { v = 'v', V = 'V', ['\22'] = '\22', s = 'v', S = 'V', ['\19'] = '\22' }

---@class gemini_companion.ActiveFile
---@field buf integer
---@field cursor {line: integer, character: integer}
---@field text string?

local group ---@type integer?
local timer ---@type uv.uv_timer_t?
local pending = false
local focused = {} ---@type table<integer, integer> buffer -> when it was last focused (ms since epoch)
local last_stamp = 0
local active ---@type gemini_companion.ActiveFile? the last focused file; kept while a terminal has focus
local last_sent ---@type table?
local filter_failed = false
local compute_failed = false

--- Milliseconds since the epoch, strictly increasing, so the newest focus is never a tie.
---@return integer
local function stamp()
  local sec, usec = uv.gettimeofday()
  last_stamp = math.max(sec * 1000 + math.floor(usec / 1000), last_stamp + 1)
  return last_stamp
end

---@param s string
---@return integer
local utf16_len = vim.fn.has('nvim-0.11') == 1 and function(s)
  return vim.str_utfindex(s, 'utf-16', nil, false)
end or function(s)
  return select(2, vim.str_utfindex(s))
end

-- The last cursor column converted, so moving along an enormous line (minified code) reads
-- only the bytes between the old and the new column.
local last_column = { buf = -1, tick = -1, row = -1, col = 0, character = 1 }

--- 1-based character of byte column `col` (0-based) in line `row`, counted in UTF-16 code units
--- as VS Code does (the clients are built around it). Invalid bytes count one each.
---@param buf integer
---@param row integer
---@param col integer
---@return integer
local function cursor_character(buf, row, col)
  local tick = api.nvim_buf_get_changedtick(buf)
  local from, base, sign = 0, 1, 1
  local memo = last_column
  if memo.buf == buf and memo.tick == tick and memo.row == row then
    from, base, sign = memo.col, memo.character, col >= memo.col and 1 or -1
  end
  local lo, hi = math.min(from, col), math.max(from, col)
  local ok, text = pcall(api.nvim_buf_get_text, buf, row - 1, lo, row - 1, hi, {})
  local character = ok and base + sign * utf16_len(text[1])
    or utf16_len((api.nvim_buf_get_lines(buf, row - 1, row, false)[1] or ''):sub(1, col)) + 1
  last_column = { buf = buf, tick = tick, row = row, col = col, character = character }
  return character
end

local request -- below: compute the state once the debounce window ends

--- Paths known to be a regular file on disk (false: not one), and those being asked about.
local on_disk = {} ---@type table<string, boolean>
local asking = {} ---@type table<string, true>

--- Is `path` a regular file on disk, as last heard? Asked with an asynchronous stat at every
--- update (a stat on the main loop would wait as long as a hung mount does): a file created or
--- deleted is seen one update later, and a new answer asks for that update. A name stuck on a
--- hung mount is asked about once, and is not shared until it answers.
---@param path string
---@return boolean
local function is_file(path)
  if not asking[path] then
    asking[path] = true
    uv.fs_stat(path, function(_, stat)
      asking[path] = nil
      local now = stat ~= nil and stat.type == 'file'
      if on_disk[path] ~= now then
        on_disk[path] = now
        vim.schedule(request)
      end
    end)
  end
  return on_disk[path] == true
end

--- The buffer's file path if it may be shared: a listed, normal buffer for a file on disk,
--- not excluded by the user's filter.
---@param buf integer
---@return string?
local function shareable(buf)
  if not api.nvim_buf_is_valid(buf) then
    return nil
  end
  if vim.bo[buf].buftype ~= '' or not vim.bo[buf].buflisted then
    return nil
  end
  local path = api.nvim_buf_get_name(buf)
  if path == '' or not is_file(path) then
    return nil
  end
  local filter = config.options.context.filter
  if filter then
    local ok, keep = pcall(filter, buf)
    if not ok and not filter_failed then
      filter_failed = true -- once: a broken filter must not flood the message area
      require('gemini_companion.message').notify(
        'context.filter failed (buffers are kept private): ' .. tostring(keep),
        vim.log.levels.ERROR
      )
    end
    if not ok or not keep then
      return nil
    end
  end
  return path
end

--- The first `cap` bytes of `text`, not cutting a character in half.
---@param text string
---@param cap integer
---@return string
local function truncate(text, cap)
  if #text <= cap then
    return text
  end
  return text:sub(1, cap + vim.str_utf_start(text, cap + 1))
end

--- The highest line in [lo, hi] that starts at or before byte `offset` of the current buffer.
---@param offset integer
---@param lo integer
---@param hi integer
---@return integer
local function line_at(offset, lo, hi)
  while lo < hi do
    local mid = math.ceil((lo + hi) / 2)
    if api.nvim_buf_get_offset(0, mid - 1) <= offset then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return lo
end

--- The text of a region of the current buffer as Neovim shows it (like a yank), at most
--- `max_selection_bytes`. Only the lines that can reach the cap are read, so selecting a
--- huge buffer costs no more than selecting 16 KiB of it.
---@param p1 integer[] getpos() of one end
---@param p2 integer[] getpos() of the other end
---@param mode string 'v', 'V' or CTRL-V
---@return string
local function region(p1, p2, mode)
  local cap = config.options.context.max_selection_bytes
  if p1[2] > p2[2] or (p1[2] == p2[2] and p1[3] > p2[3]) then
    p1, p2 = p2, p1
  end
  local offset = api.nvim_buf_get_offset
  if mode == '\22' then
    -- Each line adds at least a newline: lines past the cap cannot contribute.
    if p2[2] - p1[2] > cap then
      local last = p1[2] + cap
      local col = vim.fn.virtcol2col(0, last, vim.fn.virtcol({ p2[2], p2[3] }))
      p2 = { 0, last, math.max(col, 1), 0 }
    end
  else
    local first = offset(0, p1[2] - 1)
    local start = mode == 'V' and first or first + p1[3] - 1
    local last_len = offset(0, p2[2]) - offset(0, p2[2] - 1) - 1
    local stop = offset(0, p2[2] - 1) + (mode == 'V' and last_len or math.min(p2[3], last_len))
    if stop - start > cap then
      -- A charwise region ending at the cap reads the same text as the head of the full one.
      local limit = start + cap
      local row = line_at(limit, p1[2], p2[2])
      local len = offset(0, row) - offset(0, row - 1) - 1
      p1 = mode == 'V' and { 0, p1[2], 1, 0 } or p1
      p2 = { 0, row, math.max(1, math.min(limit - offset(0, row - 1) + 1, len)), 0 }
      mode = 'v'
    end
  end
  return truncate(table.concat(vim.fn.getregion(p1, p2, { type = mode }), '\n'), cap)
end

--- Cursor (1-based line; 1-based character in UTF-16 code units, as VS Code counts) and
--- selection of the current window, showing file `buf`.
---@param buf integer
---@param visual string? the visual mode whose selection to read, if any
---@param from_marks boolean? read the selection from the '< and '> marks (visual mode just ended)
---@return gemini_companion.ActiveFile
local function read_window(buf, visual, from_marks)
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local file = { buf = buf, cursor = { line = row, character = cursor_character(buf, row, col) } }
  if visual and config.options.context.max_selection_bytes > 0 then
    local text = from_marks and region(vim.fn.getpos("'<"), vim.fn.getpos("'>"), visual)
      or region(vim.fn.getpos('v'), vim.fn.getpos('.'), visual)
    file.text = text ~= '' and text or nil
  end
  return file
end

--- The state to share, computed from scratch (bounded: at most max_files files are looked at
--- beyond the excluded ones, off the main loop, and the selection read is capped).
---@return table
local function compute()
  local opts = config.options.context
  local buf = api.nvim_get_current_buf()
  if shareable(buf) then
    active = read_window(buf, VISUAL[api.nvim_get_mode().mode:sub(1, 1)])
  elseif active and not shareable(active.buf) then
    active = nil
  end
  -- Otherwise focus is on a terminal or another non-file window: the last file stays active.

  local bufs = vim.tbl_keys(focused)
  table.sort(bufs, function(a, b)
    return focused[a] > focused[b]
  end)
  local files = {} ---@type {buf: integer, path: string}[]
  for _, b in ipairs(bufs) do
    if #files >= opts.max_files then
      break
    end
    local path = b ~= (active and active.buf) and shareable(b)
    if path then
      table.insert(files, { buf = b, path = path })
    end
  end
  if active then
    -- The active file is the newest; bump it if something newer was entered in the meantime
    -- (say, by :bufdo from a terminal) or it was entered without BufEnter (:noautocmd).
    if files[1] and focused[files[1].buf] > (focused[active.buf] or 0) then
      focused[active.buf] = stamp()
    end
    table.insert(files, 1, { buf = active.buf, path = api.nvim_buf_get_name(active.buf) })
    files[opts.max_files + 1] = nil
  end
  for i, file in ipairs(files) do
    files[i] = { path = file.path, timestamp = focused[file.buf] or stamp() }
    if i == 1 and active then
      files[i].isActive = true
      files[i].cursor = active.cursor
      files[i].selectedText = active.text
    end
  end
  local state = { openFiles = files }
  if type(opts.is_trusted) == 'boolean' then
    state.isTrusted = opts.is_trusted
  end
  return state
end

local arm_motions

local function flush()
  pending = false
  if not group then
    return -- detached while the timer ran
  end
  arm_motions()
  local ok, state = pcall(compute)
  if not ok then
    if not compute_failed then
      compute_failed = true -- once: this runs on every debounce window
      require('gemini_companion.message').notify('context update failed: ' .. tostring(state), 'warn')
    end
    return
  end
  if not vim.deep_equal(state, last_sent) then
    last_sent = state
    host.notify('context', state)
  end
end

--- Something changed: compute the state once the debounce window ends. Constant, tiny work.
request = function()
  if not pending and timer then
    pending = true
    timer:start(config.options.context.debounce_ms, 0, vim.schedule_wrap(flush))
  end
end

--- Cursor motions fire many times a second: listen for the first one only, until the next
--- update is computed, so the motions in between cost nothing at all.
arm_motions = function()
  if group then
    api.nvim_clear_autocmds({ group = group, event = { 'CursorMoved', 'CursorMovedI' } })
    api.nvim_create_autocmd({ 'CursorMoved', 'CursorMovedI' }, { group = group, once = true, callback = request })
  end
end

--- Visual mode ended (by <Esc>, an operator, or by moving to another window): remember the
--- selection now, while the window is still current, so "select, switch to the agent, ask"
--- keeps it. A motion in the file drops it at the next update.
local function on_visual_end()
  local mode = VISUAL[vim.v.event.old_mode:sub(1, 1)]
  local buf = api.nvim_get_current_buf()
  if mode and shareable(buf) then
    local ok, file = pcall(read_window, buf, mode, true)
    if ok then
      active = file
    end
  end
  request()
end

--- Start tracking: called when the server starts.
function M.attach()
  if group then
    return
  end
  timer = uv.new_timer()
  group = api.nvim_create_augroup('gemini_companion_context', { clear = true })
  local function on(events, callback, pattern)
    api.nvim_create_autocmd(events, { group = group, pattern = pattern, callback = callback })
  end
  on('BufEnter', function(ev)
    focused[ev.buf] = stamp()
    request()
  end)
  on({ 'BufDelete', 'BufWipeout' }, function(ev)
    focused[ev.buf] = nil
    if active and active.buf == ev.buf then
      active = nil
    end
    request()
  end)
  on({ 'WinEnter', 'TextChanged', 'BufWritePost', 'BufFilePost', 'DirChanged' }, function()
    request()
  end)
  on('ModeChanged', function()
    request()
  end, '*:[vV\22sS\19]*')
  on('ModeChanged', on_visual_end, '[vV\22sS\19]*:[^vV\22sS\19]*')
  focused[api.nvim_get_current_buf()] = stamp()
  request()
  arm_motions()
end

--- Stop tracking and forget everything: called when the server stops.
function M.detach()
  if not group then
    return
  end
  api.nvim_del_augroup_by_id(group)
  group = nil
  if timer then
    timer:stop()
    timer:close()
    timer = nil
  end
  pending = false
  focused, active, last_sent, on_disk = {}, nil, nil, {}
end

return M
