--- Buffers follow the agent's edits: a file that changes on disk while its buffer is open is shown
--- at once, not when Neovim next gets focus, whoever changed it (an accepted review, a YOLO write,
--- the agent's shell, another agent, a `git checkout`). An unmodified buffer takes the new text as
--- one undoable change (follow/reload.lua); one with unsaved edits is never touched, only named
--- (`:GeminiCompanion conflict` compares, follow/conflict.lua); a deleted file's buffer stays,
--- marked. Signals: each open file's folder watched (uv fs_event, one handle per folder, bounded,
--- released with its last buffer: follow/watches.lua), and a sweep at each agent tool's end and
--- turn's end (the CLIs' hooks) for what a watch misses. Files are read off the main loop
--- (follow/reads.lua), results applied a slice of the loop at a time; whether a buffer holds the
--- new bytes and which lines changed are worked out off it (follow/delta.lua).
local message = require('gemini_companion.message')
local delta = require('gemini_companion.follow.delta')
local reload = require('gemini_companion.follow.reload')
local reads = require('gemini_companion.follow.reads')
local watches = require('gemini_companion.follow.watches')

local M = {}

-- A burst of events for one file (a write in pieces, a rename into place) is read once, this late.
local SETTLE_MS = 20
-- A buffer is reloaded at most once in this long.
local MIN_GAP_MS = 100
-- A file modified this close to its buffer's read (s, the clock's granularity) may have changed
-- after it: it is read once more.
local RECENT_S = 2

---@class gemini_companion.Followed
---@field name string the buffer's file, as Neovim reads it
---@field watches? {folder: string, base: string}[] where it is watched (resolved): its name's
---  place, and a link's target's too; nil until set up
---@field sig string what the file was when the buffer last matched it (disk.stat_signature)
---@field reading boolean? a read is under way
---@field shown integer? when it was last reloaded (uv.now, ms)
---@field again boolean? another change came during that read
---@field state nil|'conflict'|'deleted'
---@field unconfirmed boolean? the file changed about when Neovim read it: the next read compares
---@field matched? gemini_companion.follow.Matched the bytes the buffer last held, while it holds them

---@type table<integer, gemini_companion.Followed>
local followed = {}
local pending = {} ---@type table<integer, true> buffers to read once the burst settles
local timer ---@type uv.uv_timer_t?
local group ---@type integer?

local burst = require('gemini_companion.follow.burst')
local signature = require('gemini_companion.review.disk').stat_signature
local mark, in_step, recheck, read, applied, finish, apply, judged, remember -- below the public functions

--- Follow every loaded file buffer from now on, and each one read later.
function M.start()
  if group then
    return
  end
  group = vim.api.nvim_create_augroup('gemini_companion.follow', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost', 'BufWritePost' }, {
    group = group,
    callback = function(ev)
      M.track(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufUnload', 'BufDelete', 'BufWipeout' }, {
    group = group,
    callback = function(ev)
      M.untrack(ev.buf)
    end,
  })
  -- Unsaved edits undone under a file that changed: the buffer follows it again.
  vim.api.nvim_create_autocmd('BufModifiedSet', {
    group = group,
    callback = function(ev)
      if vim.bo[ev.buf].modified and followed[ev.buf] then
        followed[ev.buf].matched = nil -- (the bytes it held: not kept while it holds others)
      end
      if M.state(ev.buf) == 'conflict' and not vim.bo[ev.buf].modified then
        pending[ev.buf] = true
        M.settle_soon()
      end
    end,
  })
  -- A turn's end (changes/), and the user coming back: what a watch missed (a folder removed and
  -- made again) or no watch covers (beyond the bound).
  vim.api.nvim_create_autocmd('User', { group = group, pattern = 'GeminiTurnEnded', callback = M.sweep })
  vim.api.nvim_create_autocmd('FocusGained', { group = group, callback = M.sweep })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    M.track(buf)
  end
end

--- Stop following: every watch released.
function M.stop()
  if group then
    pcall(vim.api.nvim_del_augroup_by_id, group)
    group = nil
  end
  for buf in pairs(followed) do
    M.untrack(buf)
  end
end

--- Check every followed buffer's file (a stat each, off the main loop; a changed one is read):
--- at an agent tool's end (its hook), at a turn's end, when Neovim gets focus.
function M.sweep()
  for buf, entry in pairs(followed) do
    recheck(buf, entry)
  end
end

--- What the buffer is marked with: 'conflict' (its file changed under unsaved edits), 'deleted'
--- (its file is gone), or nil. Also in `b:gemini_companion_follow`, for a statusline.
---@param buf? integer
---@return 'conflict'|'deleted'|nil
function M.state(buf)
  local entry = followed[buf or vim.api.nvim_get_current_buf()]
  return entry and entry.state
end

--- Follow `buf` if it is a loaded buffer of a file (again, when its name changed).
---@param buf integer
function M.track(buf)
  if not group or not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= '' then
    return
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:find('^%a[%w+.-]*://') then
    return M.untrack(buf)
  end
  local entry = followed[buf]
  if entry and entry.name == name then
    mark(buf, entry, nil) -- read or written: in step with the file again
    entry.matched = nil
    return in_step(buf, entry)
  end
  M.untrack(buf)
  entry = { name = name, sig = 'missing' }
  followed[buf] = entry
  in_step(buf, entry, watches.watch)
end

--- Stop following `buf`; its folder's watch goes with the folder's last buffer.
---@param buf integer
function M.untrack(buf)
  local entry = followed[buf]
  if not entry then
    return
  end
  followed[buf] = nil
  pending[buf] = nil
  if entry.state then -- (:e! reads the file again, into the same buffer and its variables)
    pcall(vim.api.nvim_buf_del_var, buf, 'gemini_companion_follow')
  end
  for _, place in ipairs(entry.watches or {}) do
    watches.unwatch(buf, place.folder, place.base)
  end
end

--- How many folders are watched (for :checkhealth and the tests).
---@return integer
function M.watched()
  return watches.count()
end

--- Read the pending buffers' files soon: a burst of events is one read per file.
function M.settle_soon()
  timer = timer or vim.uv.new_timer()
  if timer and not timer:is_active() then
    timer:start(SETTLE_MS, 0, function()
      local bufs, now, later = pending, vim.uv.now(), false
      pending = {}
      for buf in pairs(bufs) do
        local entry = followed[buf]
        if entry and entry.shown and now - entry.shown < MIN_GAP_MS then
          pending[buf], later = true, true -- a file written all the time (a log): a few times a second
        else
          read(buf)
        end
      end
      if later then
        M.settle_soon()
      end
    end)
  end
end

-- --- watching ----------------------------------------------------------------------------------

--- Take what `entry`'s file is now as what the buffer holds (it was just read or written), then
--- `next_step`. The stat comes after Neovim's read: a file changed in between (written again a
--- moment after it was opened) would pass for the one read, and the buffer would never follow it.
--- A file changed that recently is read once more and compared.
---@param buf integer
---@param entry gemini_companion.Followed
---@param next_step? fun(buf: integer, entry: gemini_companion.Followed)
function in_step(buf, entry, next_step)
  local read_at = os.time()
  vim.uv.fs_stat(entry.name, function(_, stat)
    entry.sig = signature(stat)
    if stat and stat.mtime.sec >= read_at - RECENT_S then
      entry.unconfirmed = true
      pending[buf] = true
      M.settle_soon()
    end
    if next_step then
      next_step(buf, entry)
    end
  end)
end

--- Stat `entry`'s file (off the main loop); read it when it is not what the buffer last matched.
---@param buf integer
---@param entry gemini_companion.Followed
function recheck(buf, entry)
  vim.uv.fs_stat(entry.name, function(_, stat)
    if signature(stat) ~= entry.sig then
      pending[buf] = true
      M.settle_soon()
    end
  end)
end

-- --- reading and applying --------------------------------------------------------------------

--- Read `buf`'s file off the main loop; the result is queued for the main loop.
---@param buf integer
function read(buf)
  local entry = followed[buf]
  if not entry then
    return
  end
  if entry.reading then
    entry.again = true
    return
  end
  entry.reading = true
  reads.queue(buf)
end

--- Apply one file's result; `finish` when it is over.
---@param result gemini_companion.follow.Result
function applied(result)
  local ok, err = pcall(apply, result, function(err)
    finish(result, err)
  end)
  if not ok then
    finish(result, err)
  end
end

--- A result applied (its `done`): the file read again if it changed meanwhile.
---@param result gemini_companion.follow.Result
---@param err? string
function finish(result, err)
  if not result.entry.reading then
    return -- (an error after its `done`)
  end
  result.entry.reading = false
  if result.entry.again then
    result.entry.again = false
    pending[result.buf] = true
    M.settle_soon()
  end
  if err then
    message.notify(('following %s: %s'):format(vim.fn.strtrans(result.entry.name), err), 'error')
  end
end

--- One file's new state, on the main loop; `done` once it is shown (a large one's lines are
--- worked out off the main loop first, and put in a slice at a time).
---@param result gemini_companion.follow.Result
---@param done fun(err: string?)
function apply(result, done)
  local buf, entry = result.buf, result.entry
  if followed[buf] ~= entry or not vim.api.nvim_buf_is_loaded(buf) then
    return done()
  end
  local stale = entry.state == 'deleted' or (entry.state == 'conflict' and not vim.bo[buf].modified)
  local unconfirmed = entry.unconfirmed and result.text ~= nil -- (a file it cannot read: as before)
  entry.unconfirmed = nil
  if result.sig == entry.sig and not stale and not unconfirmed then
    return done() -- as it was when the buffer last matched it (a write of ours, an event for nothing)
  end
  local why = result.why or ''
  if why:find('^ENOENT') or why:find('^ENOTDIR') then
    if entry.state ~= 'deleted' then
      entry.sig, entry.matched = 'missing', nil
      reload.settle(buf, nil) -- Neovim's own check says nothing of it later (no E211)
      mark(buf, entry, 'deleted')
      burst.say('deleted', entry.name)
    end
    return done()
  elseif why == 'changing' then -- still being written: its next event (or sweep) reads it whole
    pending[buf] = true
    M.settle_soon()
    return done()
  elseif not result.text then
    if entry.sig ~= result.sig then
      entry.sig = result.sig
      burst.say('unread', entry.name, why)
    end
    return done()
  elseif not delta.fits(buf) then
    return judged(result, reload.holds(buf, result.text), nil, done)
  end
  delta.judge(buf, result.text, entry.matched, function(verdict, plan)
    if followed[buf] ~= entry or not vim.api.nvim_buf_is_loaded(buf) then
      return done()
    elseif verdict == 'moved' and not vim.bo[buf].modified then
      pending[buf] = true -- changed as it was being compared: compared again
      M.settle_soon()
      return done()
    end
    local ok, err = pcall(function()
      if verdict == 'unsure' then
        return judged(result, reload.holds(buf, result.text), nil, done)
      end
      judged(result, verdict == 'same', plan, done)
    end)
    if not ok then
      done(err)
    end
  end)
end

--- One file's new bytes, once it is known whether the buffer `holds` them: kept, or shown.
---@param result gemini_companion.follow.Result
---@param holds boolean
---@param plan? gemini_companion.follow.Plan the changes, worked out off the main loop
---@param done fun(err: string?)
function judged(result, holds, plan, done)
  local buf, entry = result.buf, result.entry
  if holds then
    entry.sig = result.sig
    local function kept(still)
      if followed[buf] == entry and vim.api.nvim_buf_is_loaded(buf) then
        remember(result, still)
        mark(buf, entry, nil)
      end
      done()
    end
    if vim.bo[buf].modified then
      return kept(true)
    end
    return reload.settle(buf, result.text, result.sig, kept)
  elseif vim.bo[buf].modified then
    -- The user's text is theirs: never replaced. Not settled either, so that `:w` still warns.
    entry.sig, entry.matched = result.sig, nil
    mark(buf, entry, 'conflict')
    burst.say('conflict', entry.name)
    return done()
  end
  if plan then
    plan.sig = result.sig
  end
  reload.apply(buf, result.text, plan, function(shown, err, still)
    if shown and followed[buf] == entry and vim.api.nvim_buf_is_loaded(buf) then
      entry.sig, entry.shown = result.sig, vim.uv.now()
      remember(result, still)
      mark(buf, entry, nil)
    elseif not err and followed[buf] == entry then -- changed under the change: judged again
      pending[buf] = true
      M.settle_soon()
    end
    done(err) -- (failed: the next event or sweep reads it again)
  end, result.sig)
end

--- Whether the buffer `holds` `result`'s bytes now; if so they are kept with its fingerprint, so
--- that the next change asks no reading of the buffer (nothing kept for a buffer only Neovim's
--- reading can judge, or one Neovim's reading gave newer bytes: the file changed once more).
---@param result gemini_companion.follow.Result
---@param holds boolean?
function remember(result, holds)
  local keep = holds and result.text and delta.fits(result.buf)
  result.entry.matched = keep and { at = delta.fingerprint(result.buf), text = result.text } or nil
end

--- Set the buffer's mark (entry and `b:gemini_companion_follow`).
---@param buf integer
---@param entry gemini_companion.Followed
---@param state nil|'conflict'|'deleted'
function mark(buf, entry, state)
  if entry.state ~= state then
    entry.state = state
    vim.b[buf].gemini_companion_follow = state
    vim.cmd.redrawstatus({ bang = true })
  end
end

-- What the reads and the watches look at, and whom they tell.
reads.setup(followed, applied)
watches.setup(followed, function(bufs)
  for _, buf in ipairs(bufs) do
    pending[buf] = true
  end
  M.settle_soon()
end, recheck)

return M
