--- Which review a command means (`:GeminiAccept`, `:GeminiReject`): of those of the named file
--- (else of all), the one whose buffer the user is in, else the one of their tab, else the only
--- one. Never a guess: with several and none of them here, the user is asked to say which.
local lifecycle = require('gemini_companion.review.lifecycle')
local message = require('gemini_companion.message')

local M = {}

---@param file? string
---@return gemini_companion.Review?
function M.pick(file)
  local named = file and file ~= ''
  local candidates = lifecycle.ordered(named and vim.fs.normalize(vim.fn.fnamemodify(file, ':p')) or nil)
  if #candidates == 0 then
    message.notify(named and ('no open diff for %s'):format(file) or 'no open diff', 'error')
    return nil
  end
  local buf, tab = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_tabpage()
  for _, here in ipairs({
    function(review)
      return review.proposal == buf or review.original == buf
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
  if #candidates == 1 then
    return candidates[1]
  end
  message.notify(
    named and ('%d reviews of %s are open: use the command in the tab of the one you mean'):format(#candidates, file)
      or 'several diffs are open: name the file, or use the command in its tab',
    'error'
  )
end

return M
