--- The review tab for an agent's proposed edit: the file as it is (read-only) beside the
--- proposal (editable). The Python side owns the protocol and reads files; this side owns
--- windows and buffers and reports each diff's outcome once.
---
--- The rules (`:h gemini-companion-diff` has them as a table):
--- - A proposal is an unsaved buffer ('modified' from the start), so every command that
---   writes unsaved buffers can accept it (`:w`, `:update`, `:x`, `:wq`, `:xa`, `:wqa`), and
---   Vim's own guards apply (`:qa` and `:bd` stop at it; `:qa!` and `:bd!` reject it).
--- - Only the user's own write of the proposal accepts. A write to another file writes a copy;
---   a write from another window (`:wall`), a timer, an autocommand or a plugin's callback
---   (auto-save) is refused with a message. See `write_origin`.
--- - Closing it (`:q`, `:close`, `:tabclose`, `:bd!`) rejects it. Edits are never dropped as a
---   side effect: an edited proposal that loses its window some other way (`:tabonly`,
---   `:enew`) comes back in its own tab.
--- - A proposal whose file changed on disk since the agent read it is "stale": the left side
---   follows the disk, and accepting needs `:GeminiAccept!` (it would undo that change).
--- - A proposal whose agent is gone (host died, client disconnected) with the user's edits is
---   "orphaned": it stays open; `:GeminiAccept!` writes it to the file as the user's own
---   write (the only time the plugin writes a target file), `:q` drops it.
--- - A review is known here by its own handle. The host's id names it only to the host that
---   opened it, while it is live: a restarted host numbers from 1 again, and its reviews never
---   take an orphan's place. A new review of a file never replaces an orphan of it.
--- - Commands act on the review the user is in (its buffer, else its tab), or the one named;
---   with several candidates and none of them here, they ask instead of guessing.
--- This module is the lifecycle (the accept / reject / orphan state machine and the public
--- API); diff/view.lua renders, diff/disk.lua watches the file.
local config = require('gemini_companion.config')
local disk = require('gemini_companion.review.disk')
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')
local view = require('gemini_companion.review.view')

local M = {}

---@class gemini_companion.Text A text as one string: splitting it here is faster than
--- receiving a list of many strings.
---@field text string The lines joined by `eol`, without the last line's ending.
---@field eol string '\n' or '\r\n'.
---@field final_newline boolean The last line ends with `eol` too.

---@class gemini_companion.DiffSpec What the Python side sends to open a diff.
---@field id integer
---@field path string Absolute, resolved path of the target file.
---@field agent string Who proposed it, as the status lists clients.
---@field proposal gemini_companion.Text
---@field original gemini_companion.Text The file as it is (empty for a new file).
---@field is_new boolean The file does not exist yet.
---@field signature string The file's version the agent saw (see `signature`).
---@field first_change integer

---@class gemini_companion.Diff
---@field handle integer Ours, unique in this Neovim: what the review is known by here.
---@field id integer The host's id: names the review to the host that opened it, only while it is live.
---@field channel integer? The channel of the host that opened it.
---@field path string
---@field agent string? Who proposed it ("qwen (Qwen Code 0.24.4)").
---@field eol string
---@field final_newline boolean
---@field proposed string[] The agent's proposal, for `:e!`.
---@field current string[] The file as last read, for `:e!` on the left side.
---@field is_new boolean
---@field base string The file's version the agent saw.
---@field stale string? Why accepting would undo a change on disk.
---@field orphaned string? Why no agent waits for this proposal any more.
---@field original integer Buffer: the file as it is.
---@field proposal integer Buffer: the proposal.
---@field names {original: string, proposal: string}
---@field tick integer The proposal's changedtick when its text was last set by us.
---@field tab integer
---@field group integer Autocommand group of this diff.
---@field poll uv.uv_timer_t? Watches the file while the diff is open.
---@field closing 'close'|'side'? How the proposal's window is going away.
---@field return_win integer Where the user was when the diff opened.
---@field return_to_terminal boolean They were typing in a terminal.
---@field done boolean

--- Every open review, live or orphaned, by its handle. A new host numbers its reviews from
--- 1 again, so the host's id never names an orphan (see `live`).
---@type table<integer, gemini_companion.Diff>
local diffs = {}
local last_handle = 0

--- The live review the current host knows as `id`.
---@param id any
---@return gemini_companion.Diff?
local function live(id)
  for _, diff in pairs(diffs) do
    if diff.id == id and not diff.orphaned and diff.channel == host.channel then
      return diff
    end
  end
end

---@param text string
---@param level? 'info'|'warn'|'error'
local function notify(text, level)
  message.notify(text, level)
end

---@param diff gemini_companion.Diff
---@return string
local function proposal_text(diff)
  local lines = vim.api.nvim_buf_get_lines(diff.proposal, 0, -1, false)
  return table.concat(lines, diff.eol) .. (diff.final_newline and diff.eol or '')
end

---@param diff gemini_companion.Diff
---@return boolean
local function edited(diff)
  if not vim.api.nvim_buf_is_valid(diff.proposal) then
    return false
  end
  if vim.b[diff.proposal].changedtick == diff.tick then
    return false
  end
  return not vim.deep_equal(vim.api.nvim_buf_get_lines(diff.proposal, 0, -1, false), diff.proposed)
end

---@param diff gemini_companion.Diff
---@param lines string[]
local function set_proposal(diff, lines)
  view.set_text(diff.proposal, lines)
  vim.bo[diff.proposal].modified = true -- a pending proposal is unsaved work
  diff.tick = vim.b[diff.proposal].changedtick
end

--- Remove the tab's buffers (and with them its windows), then tell `User GeminiDiffClosed`.
---@param diff gemini_companion.Diff
---@param outcome 'accepted'|'rejected'|'closed'
local function cleanup(diff, outcome)
  local was_here = vim.api.nvim_get_current_tabpage() == diff.tab
  for _, buf in ipairs({ diff.proposal, diff.original }) do
    if vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
  -- Back to where the user was (the agent's terminal, typically), if they were reviewing.
  if was_here and outcome ~= 'closed' and vim.api.nvim_win_is_valid(diff.return_win) then
    vim.api.nvim_set_current_win(diff.return_win)
    if diff.return_to_terminal and vim.bo[vim.api.nvim_win_get_buf(diff.return_win)].buftype == 'terminal' then
      vim.cmd.startinsert()
    end
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiDiffClosed',
    modeline = false,
    data = { file = diff.path, outcome = outcome },
  })
end

--- The diff is over: forget it now, remove its tab once the current command is done
--- (we may be inside an autocommand of its buffers, or a `:wq` still has a window to close).
---@param diff gemini_companion.Diff
---@param outcome 'accepted'|'rejected'|'closed'
local function finish(diff, outcome)
  diff.done = true
  diffs[diff.handle] = nil
  pcall(vim.api.nvim_del_augroup_by_id, diff.group)
  if diff.poll then
    diff.poll:stop()
    diff.poll:close()
  end
  if vim.api.nvim_buf_is_valid(diff.proposal) then
    vim.bo[diff.proposal].modified = false -- nothing left to save: nothing may stop it closing
  end
  vim.schedule(function()
    cleanup(diff, outcome)
  end)
end

--- Is accepting refused because the file changed on disk since the agent read it?
---@param diff gemini_companion.Diff
---@return boolean
local function check_stale(diff)
  if not diff.stale and disk.signature(diff.path) ~= diff.base then
    diff.stale = 'the file changed on disk since the agent read it: accepting would undo that change'
    view.set_headers(diff)
  end
  return diff.stale ~= nil
end

--- No agent waits for this proposal any more: keep it open with the user's text.
---@param diff gemini_companion.Diff
---@param why string
local function orphan(diff, why)
  if diff.orphaned then
    return
  end
  diff.orphaned = why
  for kind, buf in pairs({ original = diff.original, proposal = diff.proposal }) do
    local old = diff.names[kind]
    diff.names[kind] = old:gsub('^gemini://%a+', 'gemini://orphaned-' .. kind) -- first: BufFilePost checks it
    if not view.rename(buf, diff.names[kind]) then
      diff.names[kind] = old
    end
  end
  vim.t[diff.tab].gemini_companion_orphaned = why
  view.set_headers(diff)
end

--- A review whose host is not the current one (replaced before its exit was noticed) has
--- nobody to answer it: orphan it rather than tell a new host an id it never gave.
---@param diff gemini_companion.Diff
local function orphan_if_gone(diff)
  if not diff.orphaned and diff.channel ~= host.channel then
    orphan(diff, 'the Python host is gone')
  end
end

--- Write the proposal's bytes to `path`: an orphaned proposal's file (never through a link or
--- into a FIFO swapped in since it was reviewed), or a copy the user named (`follow`).
---@param diff gemini_companion.Diff
---@param path string
---@param follow? boolean
---@return boolean
local function write_proposal(diff, path, follow)
  local ok, err = require('gemini_companion.files').write_in_place(path, proposal_text(diff), follow)
  if not ok then
    notify(('cannot write %s: %s'):format(view.display(path), err), 'error')
  end
  return ok
end

--- Write an orphaned proposal to its file, as the user's own write.
---@param diff gemini_companion.Diff
---@return boolean
local function write_target(diff)
  local buf = view.modified_buffer(diff.path)
  if buf then
    notify(
      ('buffer %d has unsaved edits to %s: save or discard them first'):format(buf, view.display(diff.path)),
      'error'
    )
    return false
  end
  vim.fn.mkdir(vim.fs.dirname(diff.path), 'p')
  if not write_proposal(diff, diff.path) then
    return false
  end
  notify(('wrote the orphaned proposal to %s'):format(view.display(diff.path)))
  return true
end

--- Accept the proposal as it is now. `force`: also a stale one, and write an orphaned one.
---@param diff gemini_companion.Diff
---@param force boolean
local function accept(diff, force)
  orphan_if_gone(diff)
  if diff.orphaned then
    if not force then
      notify(
        ('%s: %s. :GeminiAccept! writes it to the file, :q drops it'):format(view.display(diff.path), diff.orphaned),
        'warn'
      )
      return
    end
    if write_target(diff) then
      finish(diff, 'accepted')
      disk.reload_buffers(diff.path)
    end
    return
  end
  if check_stale(diff) and not force then
    notify(
      ('%s changed on disk since the agent read it: not accepted (:GeminiAccept! accepts anyway, :q rejects)'):format(
        view.display(diff.path)
      ),
      'warn'
    )
    return
  end
  local content = proposal_text(diff)
  local _, err = host.notify('diff_accepted', { id = diff.id, content = content })
  if err then
    M.orphan_all(err) -- the host died just now: keep the text
    return
  end
  finish(diff, 'accepted')
  disk.reload_after_write(diff.path)
end

--- Reject the proposal; an orphaned one has nobody to tell and just closes.
---@param diff gemini_companion.Diff
local function reject(diff)
  orphan_if_gone(diff)
  if diff.orphaned then
    finish(diff, 'closed')
    return
  end
  -- While Neovim exits the host is stopping: it rejects every open diff itself.
  if vim.v.exiting == vim.NIL then
    host.notify('diff_rejected', { id = diff.id })
  end
  finish(diff, 'rejected')
end

--- Where a write of the proposal comes from: nil when it is the user's own, else why not.
--- The user's write is typed or mapped (or sent by a UI over RPC) in the proposal's window.
--- Not theirs: `:wall` from another window (aucmd_prepbuf borrows the proposal's window
--- without entering it), a timer, a write nested in another autocommand (`BufLeave
--- ++nested update`), or a plugin's scheduled Lua callback (auto-save's debounced write).
---@return string?
local entered_win ---@type integer? The window the user last entered.
local quitting = false -- inside `:x`, `:wq`, `:xa`, `:wqa` (QuitPre came first)
local function write_origin()
  local state = vim.fn.state()
  if state:find('c', 1, true) then
    return 'a timer wrote it'
  end
  local _, autocmds = vim.fn.expand('<stack>'):gsub('Autocommands for', '')
  if autocmds > 1 then
    return 'an autocommand wrote it'
  end
  if not state:find('S', 1, true) then -- not while keys are being processed: RPC or a callback
    local here = debug.getinfo(1, 'S').source
    for level = 2, 100 do
      local info = debug.getinfo(level, 'S')
      if not info then
        break
      end
      if info.what ~= 'C' and info.source ~= here then
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

--- `:w file`, `:w! file`, `:saveas file`: write a copy of the proposal, as Vim would.
---@param diff gemini_companion.Diff
---@param target string
local function write_copy(diff, target)
  local path = vim.fn.fnamemodify(target, ':p')
  if (vim.uv.fs_realpath(path) or path) == diff.path then
    notify(
      ('%s is the file under review: :w accepts the proposal, :GeminiAccept! when it is stale or orphaned'):format(
        view.display(path)
      ),
      'error'
    )
    return
  end
  if not write_proposal(diff, path, true) then
    return
  end
  notify(('wrote a copy of the proposal to %s (the proposal is still in review)'):format(view.display(path)))
end

---@param diff gemini_companion.Diff
local function on_write(diff)
  local target = vim.fn.expand('<amatch>')
  if target ~= diff.names.proposal then -- `:saveas` has renamed the buffer by now: the stored name
    write_copy(diff, target)
    return
  end
  local why = write_origin()
  if why then
    local text = 'the proposal for %s was not accepted (%s): use :w in its window, or :GeminiAccept'
    notify(text:format(view.display(diff.path), why), 'warn')
    return
  end
  accept(diff, false)
end

--- `:e!` (or `:bufdo e!`) in a review buffer: back to the agent's proposal / the file's text.
---@param diff gemini_companion.Diff
---@param buf integer
local function on_read(diff, buf)
  if buf == diff.proposal then
    set_proposal(diff, diff.proposed)
  else
    view.set_text(diff.original, diff.current)
  end
  vim.cmd('diffupdate')
end

--- `:saveas x` or `:file x` renamed the proposal: a proposal keeps its name (`:saveas` then
--- writes a copy), and the alternate buffer Vim made of the old name goes.
---@param diff gemini_companion.Diff
---@param buf integer
local function on_rename(diff, buf)
  vim.schedule(function() -- once `:saveas` is done with the buffer (and has written the copy)
    local want = buf == diff.proposal and diff.names.proposal or diff.names.original
    if diff.done or not vim.api.nvim_buf_is_valid(buf) or vim.api.nvim_buf_get_name(buf) == want then
      return
    end
    local taken = vim.api.nvim_buf_get_name(buf)
    view.rename(buf, want)
    if vim.fn.bufexists(taken) == 1 then -- `:saveas` may leave its target's name on a stray buffer
      view.wipe_named(taken, buf)
    end
  end)
end

--- The proposal lost its window. Closing it on purpose rejects it; an edited proposal
--- that went as a side effect of another command comes back instead of losing the edits.
---@param diff gemini_companion.Diff
local function on_hidden(diff)
  if diff.done or #vim.fn.win_findbuf(diff.proposal) > 0 then
    return -- shown again already (`:e!` reloads in place)
  end
  local closing = diff.closing
  diff.closing = nil
  if closing == 'close' or not edited(diff) or vim.v.exiting ~= vim.NIL then
    reject(diff)
    return
  end
  -- The original's windows left behind (`:enew` in the proposal's window) go with it.
  for _, win in ipairs(vim.fn.win_findbuf(diff.original)) do
    pcall(vim.api.nvim_win_close, win, true)
  end
  view.show(diff, true)
  local tab = vim.api.nvim_tabpage_get_number(diff.tab)
  notify(
    ('the proposal for %s has your edits: it stays in review in tab %d (:q there rejects it)'):format(
      view.display(diff.path),
      tab
    ),
    'warn'
  )
end

---@param diff gemini_companion.Diff
local function attach(diff)
  local function on(events, buf, callback)
    vim.api.nvim_create_autocmd(events, { group = diff.group, buffer = buf, callback = callback })
  end
  on('BufWriteCmd', diff.proposal, function()
    on_write(diff)
  end)
  for _, buf in ipairs({ diff.proposal, diff.original }) do
    on('BufReadCmd', buf, function()
      on_read(diff, buf)
    end)
    on('BufFilePost', buf, function()
      on_rename(diff, buf)
    end)
  end
  -- `:q` in the proposal's window, or a window of the review tab closed from inside it
  -- (`:close`, `:tabclose`, `:only`): on purpose. From elsewhere (`:tabonly`): a side effect.
  on('QuitPre', diff.proposal, function()
    diff.closing = 'close'
  end)
  vim.api.nvim_create_autocmd('WinClosed', {
    group = diff.group,
    callback = function(ev)
      local win = tonumber(ev.match)
      if win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == diff.proposal then
        diff.closing = diff.closing or (vim.api.nvim_get_current_tabpage() == diff.tab and 'close' or 'side')
      end
    end,
  })
  -- Decided once the command is done: `:e!` unloads and reloads in place.
  on({ 'BufWinLeave', 'BufUnload' }, diff.proposal, function(ev)
    if ev.event == 'BufUnload' and not diff.closing then
      diff.closing = 'close' -- `:bd!`, `:bw`, `:q!`: the buffer itself was removed on purpose
    end
    vim.schedule(function()
      if ev.event == 'BufUnload' and vim.api.nvim_buf_is_loaded(diff.proposal) then
        diff.closing = nil -- reloaded (`:e!`), not removed
        return
      end
      on_hidden(diff)
    end)
  end)
end

local global_group ---@type integer?

--- Autocommands for all diffs: the user's window, quit commands, and no LSP on review buffers.
local function track()
  if global_group then
    return
  end
  global_group = vim.api.nvim_create_augroup('gemini_companion_diffs', { clear = true })
  entered_win = vim.api.nvim_get_current_win()
  vim.api.nvim_create_autocmd('WinEnter', {
    group = global_group,
    callback = function()
      entered_win = vim.api.nvim_get_current_win()
    end,
  })
  vim.api.nvim_create_autocmd('QuitPre', {
    group = global_group,
    callback = function()
      quitting = true
      vim.schedule(function()
        quitting = false
      end)
    end,
  })
  -- Review buffers are not files: no diagnostics on them, no rename edits into them.
  vim.api.nvim_create_autocmd('LspAttach', {
    group = global_group,
    callback = function(ev)
      if vim.api.nvim_buf_get_name(ev.buf):match('^gemini://') then
        vim.schedule(function()
          pcall(vim.lsp.buf_detach_client, ev.buf, ev.data.client_id)
        end)
      end
    end,
  })
end

---@param spec gemini_companion.DiffSpec
local function open(spec)
  for _, other in pairs(diffs) do
    orphan_if_gone(other)
  end
  -- The host replaces its own review of a file (it has told that client); an orphan is
  -- the user's to settle and stays.
  for _, other in pairs(diffs) do
    if other.path == spec.path and live(other.id) == other then
      if edited(other) then -- the user's edits in it stay, in its tab, as any review's that ends unanswered
        orphan(other, 'a newer proposal for this file replaced it')
      else
        finish(other, 'closed')
      end
    end
  end
  track()
  last_handle = last_handle + 1
  ---@type gemini_companion.Diff
  local diff = {
    handle = last_handle,
    id = spec.id,
    channel = host.channel,
    path = spec.path,
    agent = spec.agent,
    eol = spec.proposal.eol,
    final_newline = spec.proposal.final_newline,
    proposed = view.split(spec.proposal),
    current = view.split(spec.original),
    is_new = spec.is_new,
    base = spec.signature,
    original = view.new_buffer('gemini://original' .. spec.path),
    proposal = view.new_buffer('gemini://proposed' .. spec.path),
    names = {}, -- below: new_buffer may have had to add a number
    tick = 0,
    tab = 0,
    group = vim.api.nvim_create_augroup('gemini_companion_diff_' .. last_handle, { clear = true }),
    return_win = vim.api.nvim_get_current_win(),
    return_to_terminal = vim.api.nvim_get_mode().mode == 't',
    done = false,
  }
  diff.names =
    { original = vim.api.nvim_buf_get_name(diff.original), proposal = vim.api.nvim_buf_get_name(diff.proposal) }
  diffs[diff.handle] = diff
  view.set_text(diff.original, diff.current)
  vim.bo[diff.original].buftype = 'nofile'
  vim.bo[diff.original].modifiable = false
  vim.bo[diff.original].readonly = true
  vim.bo[diff.proposal].buftype = 'acwrite'
  -- Marked for auto-save plugins and scripts: not a file of the user's.
  vim.b[diff.proposal].gemini_companion_proposal = true
  vim.b[diff.proposal].autosave_disabled = true
  set_proposal(diff, diff.proposed)
  view.highlight(diff)

  local focus = config.options.diff.focus
  local proposal_win = view.show(diff, true)
  vim.t[diff.tab].gemini_companion_agent = diff.agent -- for tablines: whose proposal this tab is
  vim.api.nvim_win_set_cursor(proposal_win, { math.min(spec.first_change, #diff.proposed), 0 })
  vim.api.nvim_win_call(proposal_win, function()
    vim.cmd('normal! zvzz')
  end)
  attach(diff)
  disk.watch(diff, function()
    check_stale(diff)
    orphan_if_gone(diff)
    if not diff.orphaned then -- Python reads the file again for the left side
      host.notify('diff_refresh', { id = diff.id })
    end
  end)

  if focus then
    if diff.return_to_terminal then
      vim.cmd.stopinsert()
    end
  else
    vim.api.nvim_set_current_win(diff.return_win)
    if diff.return_to_terminal then
      vim.cmd.startinsert()
    end
    local tab = vim.api.nvim_tabpage_get_number(diff.tab)
    notify(
      ('%s proposes a change to %s: review it in tab %d'):format(
        diff.agent or 'the agent',
        view.display(diff.path),
        tab
      )
    )
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiDiffOpened',
    modeline = false,
    data = { file = diff.path, agent = diff.agent },
  })
end

--- Open a diff (called by the Python side). On failure the diff is rejected, so the
--- agent does not wait for an answer that never comes.
---@param spec gemini_companion.DiffSpec
function M.open(spec)
  local ok, err = pcall(open, spec)
  if not ok then
    notify(('could not open the diff for %s: %s'):format(view.display(spec.path), err), 'error')
    local diff = live(spec.id)
    if diff and not diff.done then
      reject(diff)
    elseif not diff then
      host.notify('diff_rejected', { id = spec.id })
    end
  end
end

--- Close a diff without an outcome (closeDiff); returns the proposal's text.
---@param id integer
---@return string?
function M.close(id)
  local diff = live(id)
  if not diff then
    return nil
  end
  local content = proposal_text(diff)
  finish(diff, 'closed')
  return content
end

--- The host is gone: every open proposal stays, orphaned.
---@param why string
function M.orphan_all(why)
  for _, diff in pairs(diffs) do
    orphan(diff, why)
  end
end

--- Their client went away (or the server stopped): an edited proposal is kept, orphaned;
--- the others close.
---@param ids integer[]
---@param why? string
function M.close_all(ids, why)
  for _, id in ipairs(ids) do
    local diff = live(id)
    if diff and why and edited(diff) then
      orphan(diff, why)
    elseif diff then
      finish(diff, 'closed')
    end
  end
end

--- The file changed on disk while its diff was open: show its new content.
---@param id integer
---@param original (gemini_companion.Text|{is_new: boolean})|nil
---@param problem string? Why the file cannot be shown any more.
function M.original_changed(id, original, problem)
  local diff = live(id)
  if not diff then
    return
  end
  check_stale(diff)
  if original == nil or original == vim.NIL then
    diff.stale = ('the file cannot be read any more (%s)'):format(problem or '?')
    view.set_headers(diff)
    notify(('%s changed on disk and cannot be shown: %s'):format(view.display(diff.path), problem or '?'), 'warn')
    return
  end
  diff.current = view.split(original)
  diff.is_new = original.is_new
  view.set_text(diff.original, diff.current)
  view.set_headers(diff)
  notify(('%s changed on disk: the diff now shows its new content'):format(view.display(diff.path)), 'warn')
end

--- The open reviews (live and orphaned), oldest first; of `path` only if given.
---@param path? string
---@return gemini_companion.Diff[]
local function ordered(path)
  local real = path and vim.uv.fs_realpath(path)
  local found = vim.tbl_filter(function(diff)
    return not path or diff.path == path or diff.path == real
  end, vim.tbl_values(diffs))
  table.sort(found, function(a, b)
    return a.handle < b.handle
  end)
  return found
end

--- The open review of `path`, if any: the live one, else the oldest orphan.
---@param path string
---@return gemini_companion.Diff?
function M.find(path)
  local found = ordered(path)
  for _, diff in ipairs(found) do
    if not diff.orphaned then
      return diff
    end
  end
  return found[1]
end

--- Paths of the open diffs that `keep` accepts (all by default), oldest first.
---@param keep? fun(diff: gemini_companion.Diff): boolean
---@return string[]
local function paths(keep)
  local found = {}
  for _, diff in ipairs(ordered()) do
    if not keep or keep(diff) then
      table.insert(found, diff.path)
    end
  end
  return found
end

--- Paths of the open diffs, oldest first.
---@return string[]
function M.files()
  return paths()
end

--- Paths of the orphaned diffs.
---@return string[]
function M.orphaned()
  return paths(function(diff)
    return diff.orphaned ~= nil
  end)
end

--- The review a command means: of those of the named file (else of all), the one whose
--- buffer the user is in, else the one of their tab, else the only one. Never a guess:
--- with several and none of them here, the user is asked to say which.
---@param file? string
---@return gemini_companion.Diff?
local function target(file)
  local named = file and file ~= ''
  local candidates = ordered(named and vim.fs.normalize(vim.fn.fnamemodify(file, ':p')) or nil)
  if #candidates == 0 then
    notify(named and ('no open diff for %s'):format(file) or 'no open diff', 'error')
    return nil
  end
  local buf, tab = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_tabpage()
  for _, here in ipairs({
    function(diff)
      return diff.proposal == buf or diff.original == buf
    end,
    function(diff)
      return diff.tab == tab
    end,
  }) do
    local found = vim.tbl_filter(here, candidates)
    if #found == 1 then
      return found[1]
    end
  end
  if #candidates == 1 then
    return candidates[1]
  end
  notify(
    named and ('%d reviews of %s are open: use the command in the tab of the one you mean'):format(#candidates, file)
      or 'several diffs are open: name the file, or use the command in its tab',
    'error'
  )
end

--- Accept a diff's proposal as it is now (:GeminiAccept[!]).
---@param file? string
---@param force? boolean `!`: also when the file changed on disk; write an orphaned proposal.
function M.accept(file, force)
  local diff = target(file)
  if diff then
    accept(diff, force == true)
  end
end

--- Reject a diff (:GeminiReject).
---@param file? string
function M.reject(file)
  local diff = target(file)
  if diff then
    reject(diff)
  end
end

--- A `gemini://` buffer read with no live diff behind it (a restored session, a typed
--- name): it has nothing to show, so it goes, with its windows and an emptied tab.
---@param buf integer
function M.read_stray(buf)
  for _, diff in pairs(diffs) do
    if buf == diff.proposal or buf == diff.original then
      return -- a live diff's own BufReadCmd handles it
    end
  end
  vim.schedule(function()
    M.sweep_stray()
  end)
end

--- Wipe `gemini://` buffers no diff owns, and tabs left with nothing but them.
function M.sweep_stray()
  local owned = {}
  for _, diff in pairs(diffs) do
    owned[diff.proposal], owned[diff.original] = true, true
  end
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

--- Completion for :GeminiAccept / :GeminiReject.
---@param lead string
---@return string[]
function M.complete(lead)
  local names = vim.tbl_map(view.display, M.files())
  return vim.tbl_filter(function(name)
    return vim.startswith(name, lead)
  end, names)
end

--- For tests and statuslines: buffers, tab and state of the diff for `path`.
---@param path string
---@return {tab: integer, original: integer, proposal: integer, orphaned: string?, stale: string?, edited: boolean}?
function M.info(path)
  local diff = M.find(path)
  if diff then
    return {
      tab = diff.tab,
      original = diff.original,
      proposal = diff.proposal,
      orphaned = diff.orphaned,
      stale = diff.stale,
      edited = edited(diff),
    }
  end
end

return M
