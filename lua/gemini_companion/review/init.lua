--- The review tab for an agent's proposed edit: the file as it is (read-only) beside the
--- proposal (editable). The Python side owns the protocol and reads files; this side owns
--- windows and buffers and reports each review's outcome once.
---
--- The rules (`:h gemini-companion-diff` has them as a table):
--- - A proposal is an unsaved buffer ('modified' from the start), so every command that
---   writes unsaved buffers can accept it (`:w`, `:update`, `:x`, `:wq`, `:xa`, `:wqa`), and
---   Vim's own guards apply (`:qa` and `:bd` stop at it; `:qa!` and `:bd!` reject it).
--- - Only the user's own write of the proposal accepts. A write to another file writes a copy;
---   a write from another window (`:wall`), a timer, an autocommand or a plugin's callback
---   (auto-save) is refused with a message. See write_origin.lua.
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
--- This module is the public face (opening a review, the host's and the commands' entry points);
--- lifecycle.lua ends each review once, events.lua wires its buffers, write_origin.lua tells the
--- user's write from others', target.lua picks the review a command means, stray.lua sweeps
--- leftover buffers, view.lua renders, placement.lua opens the windows where the user chose,
--- unified.lua is the one-buffer preview, disk.lua watches the file.
local config = require('gemini_companion.config')
local disk = require('gemini_companion.review.disk')
local events = require('gemini_companion.review.events')
local host = require('gemini_companion.host')
local lifecycle = require('gemini_companion.review.lifecycle')
local message = require('gemini_companion.message')
local placement = require('gemini_companion.review.placement')
local stray = require('gemini_companion.review.stray')
local target = require('gemini_companion.review.target')
local unified = require('gemini_companion.review.unified')
local view = require('gemini_companion.review.view')

local M = {}
local H = {}

--- Open a review (called by the Python side). On failure it is rejected, so the
--- agent does not wait for an answer that never comes.
---@param spec gemini_companion.ReviewSpec
function M.open(spec)
  local ok, err = pcall(H.open, spec)
  if not ok then
    message.notify(('could not open the diff for %s: %s'):format(view.display(spec.path), err), 'error')
    local review = lifecycle.live(spec.id)
    if review and not review.done then
      lifecycle.reject(review)
    elseif not review then
      host.notify('review_rejected', { id = spec.id })
    end
  end
end

--- Close a review without an outcome (closeDiff); returns the proposal's text.
---@param id integer
---@return string?
function M.close(id)
  local review = lifecycle.live(id)
  if not review then
    return nil
  end
  local content = lifecycle.proposal_text(review)
  lifecycle.finish(review, 'closed')
  return content
end

--- The host is gone: every open proposal stays, orphaned.
---@param why string
function M.orphan_all(why)
  lifecycle.orphan_all(why)
end

--- Their client went away (or the server stopped): an edited proposal is kept, orphaned;
--- the others close.
---@param ids integer[]
---@param why? string
function M.close_all(ids, why)
  for _, id in ipairs(ids) do
    local review = lifecycle.live(id)
    if review and why and lifecycle.edited(review) then
      lifecycle.orphan(review, why)
    elseif review then
      lifecycle.finish(review, 'closed')
    end
  end
end

--- The file changed on disk while its review was open: show its new content.
---@param id integer
---@param original (gemini_companion.Text|{is_new: boolean})|nil
---@param problem string? Why the file cannot be shown any more.
function M.original_changed(id, original, problem)
  local review = lifecycle.live(id)
  if not review then
    return
  end
  lifecycle.check_stale(review)
  if original == nil or original == vim.NIL then
    review.stale = ('the file cannot be read any more (%s)'):format(problem or '?')
    view.set_headers(review)
    message.notify(
      ('%s changed on disk and cannot be shown: %s'):format(view.display(review.path), problem or '?'),
      'warn'
    )
    return
  end
  review.current = view.split(original)
  review.is_new = original.is_new
  view.set_text(review.original, review.current)
  unified.render(review)
  view.set_headers(review)
  message.notify(('%s changed on disk: the diff now shows its new content'):format(view.display(review.path)), 'warn')
end

--- The open review of `path`, if any: the live one, else the oldest orphan.
---@param path string
---@return gemini_companion.Review?
function M.find(path)
  local found = lifecycle.ordered(path)
  for _, review in ipairs(found) do
    if not review.orphaned then
      return review
    end
  end
  return found[1]
end

--- Paths of the open reviews, oldest first.
---@return string[]
function M.files()
  return H.paths()
end

--- Paths of the orphaned reviews.
---@return string[]
function M.orphaned()
  return H.paths(function(review)
    return review.orphaned ~= nil
  end)
end

--- Accept a review's proposal as it is now (:GeminiAccept[!]); `all [agent]`: every pending
--- review of one agent.
---@param file? string
---@param force? boolean `!`: also when the file changed on disk; write an orphaned proposal.
function M.accept(file, force)
  H.settle(file, function(review)
    lifecycle.accept(review, force == true)
  end, 'accepted')
end

--- Reject a review (:GeminiReject); `all [agent]`: every pending review of one agent.
---@param file? string
function M.reject(file)
  H.settle(file, lifecycle.reject, 'rejected')
end

--- A `gemini://` buffer read with no live review behind it (a restored session, a typed
--- name): it has nothing to show, so it goes, with its windows and an emptied tab.
---@param buf integer
function M.read_stray(buf)
  stray.read(buf)
end

--- Wipe `gemini://` buffers no review owns, and tabs left with nothing but them.
function M.sweep_stray()
  stray.sweep()
end

--- Completion for :GeminiAccept / :GeminiReject: the files under review and `all`; after
--- `all `, the agents.
---@param lead string
---@param line? string
---@return string[]
function M.complete(lead, line)
  local names = (line or ''):match('^%S+%s+all%s') and target.agents()
    or vim.list_extend({ 'all' }, vim.tbl_map(view.display, M.files()))
  return vim.tbl_filter(function(name)
    return vim.startswith(name, lead)
  end, names)
end

--- For tests and statuslines: buffers, tab and state of the review for `path`.
---@param path string
---@return {tab: integer, original: integer, proposal: integer, unified: integer?, orphaned: string?, stale: string?, edited: boolean}?
function M.info(path)
  local review = M.find(path)
  if review then
    return {
      tab = review.tab,
      original = review.original,
      proposal = review.proposal,
      unified = review.unified,
      orphaned = review.orphaned,
      stale = review.stale,
      edited = lifecycle.edited(review),
    }
  end
end

---@param spec gemini_companion.ReviewSpec
function H.open(spec)
  H.replace_older(spec.path)
  events.track()
  local review = H.new_review(spec)
  local proposal_win = placement.show(review, true)
  if review.own_tab then
    vim.t[review.tab].gemini_companion_agent = review.agent -- for tablines: whose proposal this tab is
  end
  local line = review.unified and unified.first_change(review) or math.min(spec.first_change, #review.proposed)
  vim.api.nvim_win_set_cursor(proposal_win, { line, 0 })
  vim.api.nvim_win_call(proposal_win, function()
    vim.cmd('normal! zvzz')
  end)
  events.attach(review)
  disk.watch(review, function()
    lifecycle.check_stale(review)
    lifecycle.orphan_if_gone(review)
    if not review.orphaned then -- Python reads the file again for the left side
      host.notify('review_refresh', { id = review.id })
    end
  end)
  H.focus(review)
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiDiffOpened',
    modeline = false,
    data = { file = review.path, agent = review.agent },
  })
end

--- Act on the review `arg` means, or on each of `all [agent]` (and say how many it settled).
---@param arg? string
---@param act fun(diff: gemini_companion.Review)
---@param done string
function H.settle(arg, act, done)
  local all = target.all(arg)
  if not all then
    local review = target.pick(arg)
    if review then
      act(review)
    end
    return
  end
  local count = 0
  for _, review in ipairs(all) do
    act(review)
    count = count + (review.done and 1 or 0)
  end
  if #all > 0 then
    message.notify(('%s %d of %d pending reviews by %s'):format(done, count, #all, all[1].agent or 'the agent'))
  end
end

--- The host replaces its own review of a file (it has told that client); an orphan is the
--- user's to settle and stays.
---@param path string
function H.replace_older(path)
  for _, other in pairs(lifecycle.reviews) do
    lifecycle.orphan_if_gone(other)
  end
  for _, other in pairs(lifecycle.reviews) do
    if other.path == path and lifecycle.live(other.id) == other then
      if lifecycle.edited(other) then -- the user's edits in it stay, in its tab, as any review's that ends unanswered
        lifecycle.orphan(other, 'a newer proposal for this file replaced it')
      else
        lifecycle.finish(other, 'closed')
      end
    end
  end
end

--- The review's record and its two buffers, registered.
---@param spec gemini_companion.ReviewSpec
---@return gemini_companion.Review
function H.new_review(spec)
  local handle = lifecycle.next_handle()
  ---@type gemini_companion.Review
  local review = {
    handle = handle,
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
    group = vim.api.nvim_create_augroup('gemini_companion_review_' .. handle, { clear = true }),
    return_win = vim.api.nvim_get_current_win(),
    return_to_terminal = vim.api.nvim_get_mode().mode == 't',
    done = false,
  }
  review.names =
    { original = vim.api.nvim_buf_get_name(review.original), proposal = vim.api.nvim_buf_get_name(review.proposal) }
  lifecycle.reviews[review.handle] = review
  view.set_text(review.original, review.current)
  vim.bo[review.original].buftype = 'nofile'
  vim.bo[review.original].modifiable = false
  vim.bo[review.original].readonly = true
  vim.bo[review.proposal].buftype = 'acwrite'
  -- Marked for auto-save plugins and scripts: not a file of the user's.
  vim.b[review.proposal].gemini_companion_proposal = true
  vim.b[review.proposal].autosave_disabled = true
  lifecycle.set_proposal(review, review.proposed)
  view.highlight(review)
  return review
end

--- `diff.focus`: stay in the review (out of terminal mode), or go back where the user was and
--- say where the review is.
---@param review gemini_companion.Review
function H.focus(review)
  if config.options.diff.focus then
    if review.return_to_terminal then
      vim.cmd.stopinsert()
    end
    return
  end
  vim.api.nvim_set_current_win(review.return_win)
  if review.return_to_terminal then
    vim.cmd.startinsert()
  end
  local where = review.own_tab and ('in tab %d'):format(vim.api.nvim_tabpage_get_number(review.tab)) or 'beside you'
  message.notify(
    ('%s proposes a change to %s: review it %s'):format(review.agent or 'the agent', view.display(review.path), where)
  )
end

--- Paths of the open reviews that `keep` accepts (all by default), oldest first.
---@param keep? fun(review: gemini_companion.Review): boolean
---@return string[]
function H.paths(keep)
  local found = {}
  for _, review in ipairs(lifecycle.ordered()) do
    if not keep or keep(review) then
      table.insert(found, review.path)
    end
  end
  return found
end

return M
