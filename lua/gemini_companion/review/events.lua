--- A review's buffer events: the user's `:w` (accept, or a copy elsewhere), `:e!`, renames,
--- and a proposal losing its window (reject, or back in its own tab with the user's edits);
--- and the autocommands all reviews share.
local lifecycle = require('gemini_companion.review.lifecycle')
local message = require('gemini_companion.message')
local placement = require('gemini_companion.review.placement')
local unified = require('gemini_companion.review.unified')
local view = require('gemini_companion.review.view')
local write_origin = require('gemini_companion.review.write_origin')

local M = {}
local H = {}

local global_group ---@type integer?

---@param review gemini_companion.Review
function M.attach(review)
  local function on(events, buf, callback)
    vim.api.nvim_create_autocmd(events, { group = review.group, buffer = buf, callback = callback })
  end
  -- The buffer the user answers in: the proposal, or the unified preview of it.
  local shown = review.unified or review.proposal
  on('BufWriteCmd', shown, function()
    H.on_write(review)
  end)
  for _, buf in ipairs({ review.proposal, review.original, review.unified }) do
    on('BufReadCmd', buf, function()
      H.on_read(review, buf)
    end)
    on('BufFilePost', buf, function()
      H.on_rename(review, buf)
    end)
    on('BufWinEnter', buf, function() -- shown in another window too: the keys go with it
      view.set_headers(review)
    end)
  end
  -- `:q` in the proposal's window, or a window of the review tab closed from inside it
  -- (`:close`, `:tabclose`, `:only`): on purpose. From elsewhere (`:tabonly`): a side effect.
  on('QuitPre', shown, function()
    review.closing = 'close'
  end)
  vim.api.nvim_create_autocmd('WinClosed', {
    group = review.group,
    callback = function(ev)
      local win = tonumber(ev.match)
      if win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == shown then
        review.closing = review.closing or (H.from_inside(review) and 'close' or 'side')
      end
    end,
  })
  -- Decided once the command is done: `:e!` unloads and reloads in place.
  on({ 'BufWinLeave', 'BufUnload' }, shown, function(ev)
    if ev.event == 'BufUnload' and not review.closing then
      review.closing = 'close' -- `:bd!`, `:bw`, `:q!`: the buffer itself was removed on purpose
    end
    vim.schedule(function()
      if ev.event == 'BufUnload' and vim.api.nvim_buf_is_loaded(shown) then
        review.closing = nil -- reloaded (`:e!`), not removed
        return
      end
      H.on_hidden(review)
    end)
  end)
end

--- Autocommands for all reviews: the user's window, quit commands, and no LSP on review buffers.
function M.track()
  if global_group then
    return
  end
  global_group = vim.api.nvim_create_augroup('gemini_companion_reviews', { clear = true })
  write_origin.track(global_group)
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

--- Is the user in the review (its tab, or in the current tab one of its windows)? A window closed
--- from there is closed on purpose.
---@param review gemini_companion.Review
---@return boolean
function H.from_inside(review)
  if review.own_tab then
    return vim.api.nvim_get_current_tabpage() == review.tab
  end
  local buf = vim.api.nvim_get_current_buf()
  return buf == review.proposal or buf == review.original or buf == review.unified
end

--- `:w file`, `:w! file`, `:saveas file`: write a copy of the proposal, as Vim would.
---@param review gemini_companion.Review
---@param target string
function H.write_copy(review, target)
  local path = vim.fn.fnamemodify(target, ':p')
  if (vim.uv.fs_realpath(path) or path) == review.path then
    message.notify(
      ('%s is the file under review: :w accepts the proposal, :GeminiAccept! when it is stale or orphaned'):format(
        view.display(path)
      ),
      'error'
    )
    return
  end
  if not lifecycle.write_proposal(review, path, true) then
    return
  end
  message.notify(('wrote a copy of the proposal to %s (the proposal is still in review)'):format(view.display(path)))
end

---@param review gemini_companion.Review
function H.on_write(review)
  local target = vim.fn.expand('<amatch>')
  if target ~= (review.unified and review.names.unified or review.names.proposal) then -- `:saveas` renamed it: the stored name
    H.write_copy(review, target)
    return
  end
  local why = write_origin.why_not_the_users()
  if why then
    local text = 'the proposal for %s was not accepted (%s): use :w in its window, or :GeminiAccept'
    message.notify(text:format(view.display(review.path), why), 'warn')
    return
  end
  lifecycle.accept(review, false)
end

--- `:e!` (or `:bufdo e!`) in a review buffer: back to the agent's proposal / the file's text.
---@param review gemini_companion.Review
---@param buf integer
function H.on_read(review, buf)
  if buf == review.original then
    view.set_text(review.original, review.current)
  else
    lifecycle.set_proposal(review, review.proposed)
  end
  unified.render(review)
  vim.cmd('diffupdate')
end

--- `:saveas x` or `:file x` renamed the proposal: a proposal keeps its name (`:saveas` then
--- writes a copy), and the alternate buffer Vim made of the old name goes.
---@param review gemini_companion.Review
---@param buf integer
function H.on_rename(review, buf)
  vim.schedule(function() -- once `:saveas` is done with the buffer (and has written the copy)
    local want = buf == review.proposal and review.names.proposal
      or buf == review.unified and review.names.unified
      or review.names.original
    if review.done or not vim.api.nvim_buf_is_valid(buf) or vim.api.nvim_buf_get_name(buf) == want then
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
---@param review gemini_companion.Review
function H.on_hidden(review)
  if review.done or #vim.fn.win_findbuf(review.unified or review.proposal) > 0 then
    return -- shown again already (`:e!` reloads in place)
  end
  local closing = review.closing
  review.closing = nil
  if closing == 'close' or not lifecycle.edited(review) or vim.v.exiting ~= vim.NIL then
    lifecycle.reject(review)
    return
  end
  -- The original's windows left behind (`:enew` in the proposal's window) go with it.
  for _, win in ipairs(vim.fn.win_findbuf(review.original)) do
    pcall(vim.api.nvim_win_close, win, true)
  end
  placement.show(review, true)
  local tab = vim.api.nvim_tabpage_get_number(review.tab)
  message.notify(
    ('the proposal for %s has your edits: it stays in review in tab %d (:q there rejects it)'):format(
      view.display(review.path),
      tab
    ),
    'warn'
  )
end

return M
