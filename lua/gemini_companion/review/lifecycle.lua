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

---@class gemini_companion.ReviewSpec What the Python side sends to open a review.
---@field id integer
---@field path string Absolute, resolved path of the target file.
---@field agent string Who proposed it, as the status lists clients.
---@field proposal gemini_companion.Text
---@field original gemini_companion.Text The file as it is (empty for a new file).
---@field is_new boolean The file does not exist yet.
---@field signature string The file's version the agent saw (see `signature`).
---@field first_change integer

---@class gemini_companion.Review
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
---@field group integer Autocommand group of this review.
---@field poll uv.uv_timer_t? Watches the file while the review is open.
---@field closing 'close'|'side'? How the proposal's window is going away.
---@field return_win integer Where the user was when the review opened.
---@field return_to_terminal boolean They were typing in a terminal.
---@field done boolean

--- Every open review, live or orphaned, by its handle. A new host numbers its reviews from
--- 1 again, so the host's id never names an orphan (see `live`).
---@type table<integer, gemini_companion.Review>
M.reviews = {}
local last_handle = 0

--- The live review the current host knows as `id`.
---@param id any
---@return gemini_companion.Review?
function M.live(id)
  for _, review in pairs(M.reviews) do
    if review.id == id and not review.orphaned and review.channel == host.channel then
      return review
    end
  end
end

---@param review gemini_companion.Review
---@return string
function M.proposal_text(review)
  local lines = vim.api.nvim_buf_get_lines(review.proposal, 0, -1, false)
  return table.concat(lines, review.eol) .. (review.final_newline and review.eol or '')
end

---@param review gemini_companion.Review
---@return boolean
function M.edited(review)
  if not vim.api.nvim_buf_is_valid(review.proposal) then
    return false
  end
  if vim.b[review.proposal].changedtick == review.tick then
    return false
  end
  return not vim.deep_equal(vim.api.nvim_buf_get_lines(review.proposal, 0, -1, false), review.proposed)
end

---@param review gemini_companion.Review
---@param lines string[]
function M.set_proposal(review, lines)
  view.set_text(review.proposal, lines)
  vim.bo[review.proposal].modified = true -- a pending proposal is unsaved work
  review.tick = vim.b[review.proposal].changedtick
end

--- Remove the tab's buffers (and with them its windows), then tell `User GeminiDiffClosed`.
---@param review gemini_companion.Review
---@param outcome 'accepted'|'rejected'|'closed'
function H.cleanup(review, outcome)
  local was_here = vim.api.nvim_get_current_tabpage() == review.tab
  for _, buf in ipairs({ review.proposal, review.original, review.unified }) do
    if vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
  require('gemini_companion.review.placement').restore(review)
  -- Back to where the user was (the agent's terminal, typically), if they were reviewing.
  if was_here and outcome ~= 'closed' and vim.api.nvim_win_is_valid(review.return_win) then
    vim.api.nvim_set_current_win(review.return_win)
    if review.return_to_terminal and vim.bo[vim.api.nvim_win_get_buf(review.return_win)].buftype == 'terminal' then
      vim.cmd.startinsert()
    end
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiDiffClosed',
    modeline = false,
    data = { file = review.path, outcome = outcome },
  })
end

--- The review is over: forget it now, remove its tab once the current command is done
--- (we may be inside an autocommand of its buffers, or a `:wq` still has a window to close).
---@param review gemini_companion.Review
---@param outcome 'accepted'|'rejected'|'closed'
function M.finish(review, outcome)
  review.done = true
  M.reviews[review.handle] = nil
  pcall(vim.api.nvim_del_augroup_by_id, review.group)
  if review.poll then
    review.poll:stop()
    review.poll:close()
  end
  for _, buf in ipairs({ review.proposal, review.unified }) do
    if vim.api.nvim_buf_is_valid(buf) then
      vim.bo[buf].modified = false -- nothing left to save: nothing may stop it closing
    end
  end
  require('gemini_companion.review.unified').forget(review)
  vim.schedule(function()
    H.cleanup(review, outcome)
  end)
end

--- Is accepting refused because the file changed on disk since the agent read it?
---@param review gemini_companion.Review
---@return boolean
function M.check_stale(review)
  if not review.stale and disk.signature(review.path) ~= review.base then
    review.stale = 'the file changed on disk since the agent read it: accepting would undo that change'
    view.set_headers(review)
  end
  return review.stale ~= nil
end

--- No agent waits for this proposal any more: keep it open with the user's text.
---@param review gemini_companion.Review
---@param why string
function M.orphan(review, why)
  if review.orphaned then
    return
  end
  review.orphaned = why
  for kind, buf in pairs({ original = review.original, proposal = review.proposal }) do
    local old = review.names[kind]
    review.names[kind] = old:gsub('^gemini://%a+', 'gemini://orphaned-' .. kind) -- first: BufFilePost checks it
    if not view.rename(buf, review.names[kind]) then
      review.names[kind] = old
    end
  end
  if review.own_tab then
    vim.t[review.tab].gemini_companion_orphaned = why
  end
  view.set_headers(review)
end

--- A review whose host is not the current one (replaced before its exit was noticed) has
--- nobody to answer it: orphan it rather than tell a new host an id it never gave.
---@param review gemini_companion.Review
function M.orphan_if_gone(review)
  if not review.orphaned and review.channel ~= host.channel then
    M.orphan(review, 'the Python host is gone')
  end
end

--- Write the proposal's bytes to `path`: an orphaned proposal's file (never through a link or
--- into a FIFO swapped in since it was reviewed), or a copy the user named (`follow`).
---@param review gemini_companion.Review
---@param path string
---@param follow? boolean
---@return boolean
function M.write_proposal(review, path, follow)
  local ok, err = require('gemini_companion.files').write_in_place(path, M.proposal_text(review), follow)
  if not ok then
    message.notify(('cannot write %s: %s'):format(view.display(path), err), 'error')
  end
  return ok
end

--- Write an orphaned proposal to its file, as the user's own write.
---@param review gemini_companion.Review
---@return boolean
function H.write_target(review)
  local buf = view.modified_buffer(review.path)
  if buf then
    message.notify(
      ('buffer %d has unsaved edits to %s: save or discard them first'):format(buf, view.display(review.path)),
      'error'
    )
    return false
  end
  vim.fn.mkdir(vim.fs.dirname(review.path), 'p')
  if not M.write_proposal(review, review.path) then
    return false
  end
  message.notify(('wrote the orphaned proposal to %s'):format(view.display(review.path)))
  return true
end

--- Accept the proposal as it is now. `force`: also a stale one, and write an orphaned one.
---@param review gemini_companion.Review
---@param force boolean
function M.accept(review, force)
  M.orphan_if_gone(review)
  if review.orphaned then
    if not force then
      message.notify(
        ('%s: %s. :GeminiAccept! writes it to the file, :q drops it'):format(view.display(review.path), review.orphaned),
        'warn'
      )
      return
    end
    if H.write_target(review) then
      M.finish(review, 'accepted')
      disk.reload_buffers(review.path)
    end
    return
  end
  if M.check_stale(review) and not force then
    message.notify(
      ('%s changed on disk since the agent read it: not accepted (:GeminiAccept! accepts anyway, :q rejects)'):format(
        view.display(review.path)
      ),
      'warn'
    )
    return
  end
  local content = M.proposal_text(review)
  local _, err = host.notify('review_accepted', { id = review.id, content = content })
  if err then
    M.orphan_all(err) -- the host died just now: keep the text
    return
  end
  M.finish(review, 'accepted')
  disk.reload_after_write(review.path)
end

--- Reject the proposal; an orphaned one has nobody to tell and just closes.
---@param review gemini_companion.Review
function M.reject(review)
  M.orphan_if_gone(review)
  if review.orphaned then
    M.finish(review, 'closed')
    return
  end
  -- While Neovim exits the host is stopping: it rejects every open review itself.
  if vim.v.exiting == vim.NIL then
    host.notify('review_rejected', { id = review.id })
  end
  M.finish(review, 'rejected')
end

--- The host is gone: every open proposal stays, orphaned.
---@param why string
function M.orphan_all(why)
  for _, review in pairs(M.reviews) do
    M.orphan(review, why)
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
---@return gemini_companion.Review[]
function M.ordered(path)
  local real = path and vim.uv.fs_realpath(path)
  local found = vim.tbl_filter(function(review)
    return not path or review.path == path or review.path == real
  end, vim.tbl_values(M.reviews))
  table.sort(found, function(a, b)
    return a.handle < b.handle
  end)
  return found
end

return M
