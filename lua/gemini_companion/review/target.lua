--- Which review a command means (`:GeminiAccept`, `:GeminiReject`): of those of the named file
--- (else of all), the one whose buffer the user is in, else the one of their tab, else the only
--- one. Never a guess: with several and none of them here, the user is asked to say which.
--- `all [agent]`: every pending review of one agent (a file under review named so wins).
local lifecycle = require('gemini_companion.review.lifecycle')
local message = require('gemini_companion.message')

local M = {}
local H = {}

--- The pending (not orphaned: those are settled one by one) reviews `all [agent]` means, oldest
--- first; without an agent, the one of the review the user is in, else the only one with reviews.
--- Nil: `arg` is not `all [agent]`.
---@param arg? string
---@return gemini_companion.Review[]?
function M.all(arg)
  local agent = arg and (arg == 'all' and '' or arg:match('^all%s+(.-)%s*$'))
  if not agent or #lifecycle.ordered(H.path(arg)) > 0 then
    return nil
  end
  local pending = vim.tbl_filter(function(review)
    return not review.orphaned
  end, lifecycle.ordered())
  if agent == '' then
    local here = H.here(pending)
    local labels = vim.fn.uniq(vim.fn.sort(vim.tbl_map(H.label, pending)))
    agent = here and H.label(here) or (#labels == 1 and labels[1] or nil)
    if not agent then
      local text = #labels == 0 and 'no pending review' or 'reviews by several agents are pending: name one (all %s)'
      message.notify(text:format(table.concat(M.agents(), '|')), 'error')
      return {}
    end
  end
  local found = vim.tbl_filter(function(review) -- its whole label, or its first words ("gemini", "external Qwen")
    return H.label(review) == agent or vim.startswith(H.label(review), agent .. ' ')
  end, pending)
  if #found == 0 then
    message.notify(('no pending review by %s'):format(agent), 'error')
  end
  return found
end

--- The agent names `all` completes: the first word of each pending review's agent.
---@return string[]
function M.agents()
  local pending = vim.tbl_filter(function(review)
    return not review.orphaned
  end, lifecycle.ordered())
  return vim.fn.uniq(vim.fn.sort(vim.tbl_map(function(review)
    return H.label(review):match('^%S+')
  end, pending)))
end

---@param file? string
---@return gemini_companion.Review?
function M.pick(file)
  local named = file and file ~= ''
  local candidates = lifecycle.ordered(named and H.path(file) or nil)
  if #candidates == 0 then
    message.notify(named and ('no open diff for %s'):format(file) or 'no open diff', 'error')
    return nil
  end
  local here = H.here(candidates)
  if here then
    return here
  end
  if #candidates == 1 then
    return candidates[1]
  end
  message.notify(
    named and ('%d reviews of %s are open: use the command in the tab of the one you mean'):format(#candidates, file)
      or 'several diffs are open: name the file, or use the command in its tab',
    'error'
  )
end

--- Of `candidates`, the one whose buffer the user is in, else the only one of their tab.
---@param candidates gemini_companion.Review[]
---@return gemini_companion.Review?
function H.here(candidates)
  local buf, tab = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_tabpage()
  for _, here in ipairs({
    function(review)
      return review.proposal == buf or review.original == buf or review.unified == buf
    end,
    function(review)
      return review.tab == tab
    end,
  }) do
    local found = vim.tbl_filter(here, candidates)
    if #found == 1 then
      return found[1]
    end
  end
end

--- Who proposed it, as the status lists clients: "gemini (Gemini CLI 0.61.0)".
---@param review gemini_companion.Review
---@return string
function H.label(review)
  return review.agent or 'unknown'
end

---@param file string
---@return string
function H.path(file)
  return vim.fs.normalize(vim.fn.fnamemodify(file, ':p'))
end

return M
