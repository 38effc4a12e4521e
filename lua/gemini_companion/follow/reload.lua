--- An unmodified buffer made its file's new text as one change the user can undo: only the lines
--- that differ are replaced (marks, folds, signs and other extmarks stay with their text), each
--- window's cursor and view kept, and Neovim's own record of the file brought up to date so that
--- neither its next check (focus, `:checktime`: W11, E211) nor `:w` ("changed since reading it")
--- asks.
local buffer_bytes = require('gemini_companion.tools.buffer_bytes')
local disk = require('gemini_companion.review.disk')
local slices = require('gemini_companion.follow.slices')
local stamp = require('gemini_companion.follow.stamp')
local undofile = require('gemini_companion.follow.undofile')

local M = {}

local ns = vim.api.nvim_create_namespace('gemini_companion.follow')
local keep_views, begin, patch, resync, restore_autoread, regular -- below the public functions
-- Main-loop time one slice of a planned change may take.
local SLICE_NS = 1e6

--- Whether the buffer holds exactly `text` as its file's bytes.
---@param buf integer
---@param text string
---@return boolean
function M.holds(buf, text)
  return buffer_bytes.holds(buf, text)
end

--- Make the unmodified `buf` show `text`, its file's new bytes: one undo step (`u` takes it back
--- and marks the buffer modified, `<C-r>` makes it unmodified again). With `plan` (the changed
--- lines worked out off the main loop, follow/delta.lua) they are put in a slice of the loop at a
--- time, the buffer 'nomodifiable' between slices so that no edit lands among them; never when
--- the buffer changed since the plan was made. `done` hears whether the buffer was changed to
--- show the file, and whether it holds `text` now (not when Neovim's reading took the file as it
--- is now: changed once more, or judged by Neovim).
---@param buf integer
---@param text string
---@param plan? gemini_companion.follow.Plan
---@param done? fun(shown: boolean, err: string?, holds: boolean?)
---@param sig? string without a plan: the file's stat signature when `text` was read (a plan has its own)
function M.apply(buf, text, plan, done, sig)
  done = done or function() end
  if plan then
    return patch(buf, text, plan, done)
  end
  local lines, eol = M.lines(buf, text)
  if not lines then -- an encoding or line ending Neovim must judge: its own reading
    return done(regular(buf) and M.checktime(buf, 'reload'), nil, false)
  end
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local hunks = vim.diff(table.concat(old, '\n') .. '\n', table.concat(lines, '\n') .. '\n', {
    result_type = 'indices',
  }) --[[@as integer[][] ]]
  local ops = {}
  for i = #hunks, 1, -1 do -- from the end: the line numbers above stay valid
    local a, count_a, b, count_b = unpack(hunks[i])
    ops[#ops + 1] = { count_a == 0 and a or a - 1, count_a, vim.list_slice(lines, b, b + count_b - 1) }
  end
  local change = begin(buf)
  local ok, err = pcall(function()
    for _, op in ipairs(ops) do
      vim.api.nvim_buf_set_lines(buf, op[1], op[1] + op[2], true, op[3])
    end
  end)
  if not ok then
    change.finish()
    error(err, 0)
  end
  change.finish(text, eol, sig, function(holds)
    done(true, nil, holds)
  end)
end

--- Neovim's record of the file made the file's as it is now, for a buffer that shows it already
--- (`text`, read when the file's stat signature was `sig`), or whose file is gone (nil): nothing
--- asks later. `done` hears whether the buffer still holds `text` (not when the file changed
--- once more).
---@param buf integer
---@param text string?
---@param sig? string
---@param done? fun(holds: boolean)
function M.settle(buf, text, sig, done)
  keep_views(buf, function()
    resync(buf, text, sig, done or function() end)
  end)
end

--- Neovim's `:checktime` of `buf` alone, its question answered with `choice` ('reload' reads
--- the file, its old text kept in the undo history; '' only notes the file's time, or that it is
--- gone): no prompt, whatever 'autoread' says. Whether the record was stale (a question came).
---@param buf integer
---@param choice fun(): string|string
---@return boolean asked
function M.checktime(buf, choice)
  local asked = false
  local id = vim.api.nvim_create_autocmd('FileChangedShell', {
    buffer = buf,
    callback = function()
      asked = true
      vim.v.fcs_choice = type(choice) == 'function' and choice() or choice
    end,
  })
  local undoreload, own = vim.o.undoreload, vim.api.nvim_get_option_value('autoread', { buf = buf, scope = 'local' })
  vim.o.undoreload = math.max(undoreload, vim.api.nvim_buf_line_count(buf) + 1)
  vim.bo[buf].autoread = false -- else an unmodified buffer is read without the question
  pcall(vim.cmd.checktime, buf)
  vim.o.undoreload = undoreload
  restore_autoread(buf, own)
  pcall(vim.api.nvim_del_autocmd, id)
  return asked
end

--- `text` as the buffer's lines and 'eol', when Neovim would read it so into this buffer (UTF-8
--- without a byte order mark, its line endings); nil when only Neovim's reading can tell.
---@param buf integer
---@param text string
---@return string[]? lines, boolean eol
function M.lines(buf, text)
  local bo = vim.bo[buf]
  local fenc = bo.fileencoding
  if text == '' or bo.bomb or (fenc ~= '' and fenc ~= 'utf-8') or text:sub(1, 3) == '\239\187\191' then
    return nil, false
  end
  local eol = text:sub(-1) == '\n'
  local body = eol and text:sub(1, -2) or text
  if bo.fileformat == 'dos' then
    if (eol and body:sub(-1) ~= '\r') or body:gsub('\r\n', ''):find('[\r\n]') then
      return nil, false -- a lone CR or LF: Neovim would read it as another format
    end
    return vim.split(eol and body:sub(1, -2) or body, '\r\n', { plain = true }), eol
  elseif bo.fileformat ~= 'unix' or text:find('\r\n', 1, true) then
    return nil, false
  end
  return vim.split(body, '\n', { plain = true }), eol
end

--- Each window of `buf`: its view, and extmarks on its cursor's and top line; `restore` puts
--- each back on the same text.
---@param buf integer
---@return fun() restore
local function save_views(buf)
  local views = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local view = vim.api.nvim_win_call(win, vim.fn.winsaveview)
    views[win] = {
      view = view,
      cursor = vim.api.nvim_buf_set_extmark(buf, ns, view.lnum - 1, 0, {}),
      top = vim.api.nvim_buf_set_extmark(buf, ns, view.topline - 1, 0, {}),
    }
  end
  return function()
    for win, saved in pairs(views) do
      local view = saved.view
      view.lnum = vim.api.nvim_buf_get_extmark_by_id(buf, ns, saved.cursor, {})[1] + 1
      view.topline = vim.api.nvim_buf_get_extmark_by_id(buf, ns, saved.top, {})[1] + 1
      if vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_win_call(win, function()
          vim.fn.winrestview(view)
        end)
      end
    end
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  end
end

--- Run `change`, each window of `buf` keeping its cursor and top line on the same text.
---@param buf integer
---@param change fun()
function keep_views(buf, change)
  local restore = save_views(buf)
  local ok, err = pcall(change)
  restore()
  assert(ok, err)
end

--- Start the change that makes `buf` its file's new text: views saved, its own undo step,
--- modifiable, and modified (undoing it marks the buffer modified: it then differs from the file,
--- as after Neovim's own reload). `finish(text, eol, sig, done)` ends it: the file's 'eol', the
--- buffer unmodified and Neovim's record of the file up to date (`sig`: the file's stat
--- signature when `text` was read; `done` hears whether the buffer holds `text` then);
--- `finish()`: a change left unfinished.
---@param buf integer
---@return {finish: fun(text: string?, eol: boolean?, sig: string?, done: fun(holds: boolean)?), modifiable: boolean}
function begin(buf)
  local restore = save_views(buf)
  local bo = vim.bo[buf]
  local change = { modifiable = bo.modifiable }
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('let &g:undolevels = &g:undolevels') -- its own undo step, joined to nothing before it
  end)
  bo.modified, bo.modifiable = true, true
  function change.finish(text, eol, sig, done)
    if not vim.api.nvim_buf_is_loaded(buf) then
      return
    end
    bo.modifiable = change.modifiable
    if not text then
      return restore()
    end
    bo.eol = eol
    bo.modified = false -- last: 'eol' set after it would make the buffer differ from the file
    local ok, err = pcall(resync, buf, text, sig, function(holds)
      if vim.api.nvim_buf_is_loaded(buf) and bo.undofile then -- the history kept for the file as it is now
        undofile.follow(buf)
      end
      if done then
        done(holds)
      end
    end)
    restore()
    assert(ok, err)
  end
  return change
end

--- `plan`'s changes made to `buf`, a slice of the loop at a time, as one undo step.
---@param buf integer
---@param text string
---@param plan gemini_companion.follow.Plan
---@param done fun(shown: boolean, err: string?)
function patch(buf, text, plan, done)
  if vim.api.nvim_buf_get_changedtick(buf) ~= plan.tick or vim.bo[buf].modified then
    return done(false) -- changed since the plan was made: its lines are stale
  end
  local ops = plan.ops:gmatch('(%d+),(%d+),(%d+),(%-?%d+),(%d+);')
  local change = begin(buf)
  local slice
  -- A slice of changes; false when they are all made.
  local function some()
    local started = vim.uv.hrtime()
    repeat
      local at, out, from, to, count = ops()
      if not at then
        return false
      end
      local lines = count == '0' and {}
        or vim.split(plan.source:sub(tonumber(from), tonumber(to)), '\n', { plain = true })
      vim.api.nvim_buf_set_lines(buf, tonumber(at), tonumber(at) + tonumber(out), true, lines)
    until vim.uv.hrtime() - started > SLICE_NS
    return true
  end
  function slice()
    local ok, more = pcall(some)
    if not ok then
      pcall(change.finish) -- (left modified: never taken for the file's text)
      return done(false, more)
    elseif not more then
      local finished, err = pcall(change.finish, text, plan.eol, plan.sig, function(holds)
        done(true, nil, holds)
      end)
      return not finished and done(false, err)
    end
    vim.bo[buf].modifiable = false
    local tick = vim.api.nvim_buf_get_changedtick(buf)
    vim.defer_fn(function() -- keys and redraws first
      if not vim.api.nvim_buf_is_loaded(buf) or vim.api.nvim_buf_get_changedtick(buf) ~= tick then
        pcall(change.finish) -- changed between slices (:e!, 'modifiable' set again and an edit)
        return done(false)
      end
      vim.bo[buf].modifiable = true
      pcall(vim.api.nvim_buf_call, buf, function()
        vim.cmd('undojoin') -- the slices are one undo step
      end)
      slice()
    end, 0)
  end
  slice()
end

--- Bring Neovim's record of the file (time, size, mode, and the time `:w` checks) up to date.
--- With `sig`, the file's stat signature when `text` was read: a stat (follow/stamp.lua). Else,
--- or where that cannot be done, Neovim's own reading: when the record is stale, the file
--- (identical to the buffer by now) is read, and that reading's undo step, which changed nothing,
--- taken off again in the next slice of the loop (each is a pass over the whole text; nothing can
--- land between: 'nomodifiable'). A file that changed once more meanwhile stays read, as Neovim's
--- own reload: with `sig` that is a stat (the buffer's bytes built and compared held the main
--- loop 15 ms at 1.3 MB). `done` hears whether the buffer holds `text` after it.
---@param buf integer
---@param text string?
---@param sig? string
---@param done fun(holds: boolean)
function resync(buf, text, sig, done)
  local seq = vim.api.nvim_buf_call(buf, function()
    return vim.fn.undotree().seq_cur
  end)
  if not text then
    M.checktime(buf, '') -- gone: noted, no E211
    return done(false)
  elseif vim.bo[buf].modified or not regular(buf) then
    return done(true) -- (never: a modified buffer's check would ask W12)
  end
  local stamped = sig and stamp.stamp(buf, sig)
  if stamped ~= nil then
    return done(stamped)
  end
  -- 'autoread' reads an unmodified buffer at once; without autocommands: nothing else needs to
  -- hear of a reading that changes nothing (it costs a .txt file 3 ms of filetype detection).
  local undoreload, own = vim.o.undoreload, vim.api.nvim_get_option_value('autoread', { buf = buf, scope = 'local' })
  vim.o.undoreload = math.max(undoreload, vim.api.nvim_buf_line_count(buf) + 1)
  vim.bo[buf].autoread = true
  pcall(vim.cmd, 'noautocmd checktime ' .. buf)
  vim.o.undoreload = undoreload
  restore_autoread(buf, own)
  local read = vim.api.nvim_buf_call(buf, function()
    return vim.fn.undotree().seq_cur ~= seq
  end)
  if not read then
    return done(true) -- the record was the file's already
  elseif not (sig and disk.signature(vim.api.nvim_buf_get_name(buf)) == sig or (not sig and M.holds(buf, text))) then
    return done(false)
  end
  local modifiable, tick = vim.bo[buf].modifiable, vim.api.nvim_buf_get_changedtick(buf)
  vim.bo[buf].modifiable = false
  slices.soon(function()
    if not vim.api.nvim_buf_is_loaded(buf) then
      return done(false)
    end
    local same = vim.api.nvim_buf_get_changedtick(buf) == tick
    local ok = not same
      or pcall(keep_views, buf, function()
        vim.bo[buf].modifiable = true -- (off: E21, as for any undo)
        vim.api.nvim_buf_call(buf, function()
          vim.cmd('silent undo')
        end)
        vim.bo[buf].modified = false
      end)
    vim.bo[buf].modifiable = modifiable
    done(ok and same)
  end)
end

--- `buf`'s own 'autoread' (nil: none, the global one applies) put back.
---@param buf integer
---@param own boolean?
function restore_autoread(buf, own)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd(own == nil and 'set autoread<' or ('setlocal %sautoread'):format(own and '' or 'no'))
  end)
end

--- Whether `buf`'s file is a regular file now: Neovim's own reading waits on a FIFO swapped in
--- since it was read.
---@param buf integer
---@return boolean
function regular(buf)
  local stat = vim.uv.fs_stat(vim.api.nvim_buf_get_name(buf))
  return stat ~= nil and stat.type == 'file'
end

return M
