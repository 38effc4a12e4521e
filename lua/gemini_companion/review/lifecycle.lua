--- The review's lifecycle: the registry of open reviews and the accept / reject / orphan
--- state machine that ends each one exactly once (`:h gemini-companion-diff-rules`).
local disk = require('gemini_companion.review.disk')
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')
local view = require('gemini_companion.review.view')

local M = {}
local H = {}

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
---@field names {original: string, proposal: string, unified: string?}
---@field tick integer The proposal's changedtick when its text was last set by us.
---@field tab integer The review's tab, or the tab it opened in beside the user's windows.
---@field own_tab boolean? It has a tab of its own (`diff.open_in_new_tab`).
---@field sizes table<integer, integer[]>? The current tab's window sizes before the review opened there.
---@field unified integer? Buffer: the unified preview (`diff.layout = 'unified'`).
---@field group integer Autocommand group of this diff.
---@field poll uv.uv_timer_t? Watches the file while the diff is open.
---@field closing 'close'|'side'? How the proposal's window is going away.
---@field return_win integer Where the user was when the diff opened.
---@field return_to_terminal boolean They were typing in a terminal.
---@field done boolean

--- Every open review, live or orphaned, by its handle. A new host numbers its reviews from
--- 1 again, so the host's id never names an orphan (see `live`).
---@type table<integer, gemini_companion.Diff>
M.diffs = {}
local last_handle = 0

--- The live review the current host knows as `id`.
---@param id any
---@return gemini_companion.Diff?
function M.live(id)
  for _, diff in pairs(M.diffs) do
    if diff.id == id and not diff.orphaned and diff.channel == host.channel then
      return diff
    end
  end
end

---@param diff gemini_companion.Diff
---@return string
function M.proposal_text(diff)
  local lines = vim.api.nvim_buf_get_lines(diff.proposal, 0, -1, false)
  return table.concat(lines, diff.eol) .. (diff.final_newline and diff.eol or '')
end

---@param diff gemini_companion.Diff
---@return boolean
function M.edited(diff)
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
function M.set_proposal(diff, lines)
  view.set_text(diff.proposal, lines)
  vim.bo[diff.proposal].modified = true -- a pending proposal is unsaved work
  diff.tick = vim.b[diff.proposal].changedtick
end

--- Remove the tab's buffers (and with them its windows), then tell `User GeminiDiffClosed`.
---@param diff gemini_companion.Diff
---@param outcome 'accepted'|'rejected'|'closed'
function H.cleanup(diff, outcome)
  local was_here = vim.api.nvim_get_current_tabpage() == diff.tab
  for _, buf in ipairs({ diff.proposal, diff.original, diff.unified }) do
    if vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
  require('gemini_companion.review.placement').restore(diff)
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
function M.finish(diff, outcome)
  diff.done = true
  M.diffs[diff.handle] = nil
  pcall(vim.api.nvim_del_augroup_by_id, diff.group)
  if diff.poll then
    diff.poll:stop()
    diff.poll:close()
  end
  for _, buf in ipairs({ diff.proposal, diff.unified }) do
    if vim.api.nvim_buf_is_valid(buf) then
      vim.bo[buf].modified = false -- nothing left to save: nothing may stop it closing
    end
  end
  require('gemini_companion.review.unified').forget(diff)
  vim.schedule(function()
    H.cleanup(diff, outcome)
  end)
end

--- Is accepting refused because the file changed on disk since the agent read it?
---@param diff gemini_companion.Diff
---@return boolean
function M.check_stale(diff)
  if not diff.stale and disk.signature(diff.path) ~= diff.base then
    diff.stale = 'the file changed on disk since the agent read it: accepting would undo that change'
    view.set_headers(diff)
  end
  return diff.stale ~= nil
end

--- No agent waits for this proposal any more: keep it open with the user's text.
---@param diff gemini_companion.Diff
---@param why string
function M.orphan(diff, why)
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
  if diff.own_tab then
    vim.t[diff.tab].gemini_companion_orphaned = why
  end
  view.set_headers(diff)
end

--- A review whose host is not the current one (replaced before its exit was noticed) has
--- nobody to answer it: orphan it rather than tell a new host an id it never gave.
---@param diff gemini_companion.Diff
function M.orphan_if_gone(diff)
  if not diff.orphaned and diff.channel ~= host.channel then
    M.orphan(diff, 'the Python host is gone')
  end
end

--- Write the proposal's bytes to `path`: an orphaned proposal's file (never through a link or
--- into a FIFO swapped in since it was reviewed), or a copy the user named (`follow`).
---@param diff gemini_companion.Diff
---@param path string
---@param follow? boolean
---@return boolean
function M.write_proposal(diff, path, follow)
  local ok, err = require('gemini_companion.files').write_in_place(path, M.proposal_text(diff), follow)
  if not ok then
    message.notify(('cannot write %s: %s'):format(view.display(path), err), 'error')
  end
  return ok
end

--- Write an orphaned proposal to its file, as the user's own write.
---@param diff gemini_companion.Diff
---@return boolean
function H.write_target(diff)
  local buf = view.modified_buffer(diff.path)
  if buf then
    message.notify(
      ('buffer %d has unsaved edits to %s: save or discard them first'):format(buf, view.display(diff.path)),
      'error'
    )
    return false
  end
  vim.fn.mkdir(vim.fs.dirname(diff.path), 'p')
  if not M.write_proposal(diff, diff.path) then
    return false
  end
  message.notify(('wrote the orphaned proposal to %s'):format(view.display(diff.path)))
  return true
end

--- Accept the proposal as it is now. `force`: also a stale one, and write an orphaned one.
---@param diff gemini_companion.Diff
---@param force boolean
function M.accept(diff, force)
  M.orphan_if_gone(diff)
  if diff.orphaned then
    if not force then
      message.notify(
        ('%s: %s. :GeminiAccept! writes it to the file, :q drops it'):format(view.display(diff.path), diff.orphaned),
        'warn'
      )
      return
    end
    if H.write_target(diff) then
      M.finish(diff, 'accepted')
      disk.reload_buffers(diff.path)
    end
    return
  end
  if M.check_stale(diff) and not force then
    message.notify(
      ('%s changed on disk since the agent read it: not accepted (:GeminiAccept! accepts anyway, :q rejects)'):format(
        view.display(diff.path)
      ),
      'warn'
    )
    return
  end
  local content = M.proposal_text(diff)
  local _, err = host.notify('diff_accepted', { id = diff.id, content = content })
  if err then
    M.orphan_all(err) -- the host died just now: keep the text
    return
  end
  M.finish(diff, 'accepted')
  disk.reload_after_write(diff.path)
end

--- Reject the proposal; an orphaned one has nobody to tell and just closes.
---@param diff gemini_companion.Diff
function M.reject(diff)
  M.orphan_if_gone(diff)
  if diff.orphaned then
    M.finish(diff, 'closed')
    return
  end
  -- While Neovim exits the host is stopping: it rejects every open diff itself.
  if vim.v.exiting == vim.NIL then
    host.notify('diff_rejected', { id = diff.id })
  end
  M.finish(diff, 'rejected')
end

--- The host is gone: every open proposal stays, orphaned.
---@param why string
function M.orphan_all(why)
  for _, diff in pairs(M.diffs) do
    M.orphan(diff, why)
  end
end

--- A new review's handle: ours, unique in this Neovim.
---@return integer
function M.next_handle()
  last_handle = last_handle + 1
  return last_handle
end

--- The open reviews (live and orphaned), oldest first; of `path` only if given.
---@param path? string
---@return gemini_companion.Diff[]
function M.ordered(path)
  local real = path and vim.uv.fs_realpath(path)
  local found = vim.tbl_filter(function(diff)
    return not path or diff.path == path or diff.path == real
  end, vim.tbl_values(M.diffs))
  table.sort(found, function(a, b)
    return a.handle < b.handle
  end)
  return found
end

return M
