-- The unified preview's `do`: after any number of take-backs, in any order, the proposal is
-- exactly the file's lines where taken back and the agent's elsewhere (the other changes are
-- shifted, not diffed again).
local unified = require('gemini_companion.review.unified')

local handle = 0

--- A review of `old` proposing `new`, its preview in the current window.
local function review(old, new)
  handle = handle + 1
  local proposal = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(proposal, 0, -1, false, new)
  local diff = { handle = handle, path = '/nonexistent/u' .. handle, current = old, proposal = proposal, names = {} }
  vim.api.nvim_set_current_buf(unified.buffer(diff))
  return diff
end

--- `do` on the preview line that reads `text`.
local function take_back(text)
  local row = vim.fn.index(vim.api.nvim_buf_get_lines(0, 0, -1, false), text) + 1
  assert(row > 0, text .. ' is not in the preview')
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.cmd('normal do')
end

local function proposal(diff)
  return vim.api.nvim_buf_get_lines(diff.proposal, 0, -1, false)
end

local OLD = { 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n' }
-- Three changes of different sizes: two lines for one, one line deleted, three lines added.
local NEW = { 'a', 'B1', 'B2', 'c', 'd', 'e', 'f', 'h', 'i', 'j', 'k', 'x', 'y', 'z', 'l', 'm', 'n' }

return {
  taking_every_change_back_in_any_order_gives_the_file = function()
    for _, order in ipairs({ { '+B1', '-g', '+x' }, { '+x', '-g', '+B1' }, { '-g', '+x', '+B1' } }) do
      local diff = review(OLD, NEW)
      for _, line in ipairs(order) do
        take_back(line)
      end
      assert(vim.deep_equal(proposal(diff), OLD), vim.inspect({ order, proposal(diff) }))
      assert(vim.deep_equal(vim.api.nvim_buf_get_lines(0, 0, -1, false), { '' }), 'nothing left to show')
    end
  end,

  taking_one_back_keeps_the_others = function()
    local diff = review(OLD, NEW)
    take_back('-g')
    local want = { 'a', 'B1', 'B2', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'x', 'y', 'z', 'l', 'm', 'n' }
    assert(vim.deep_equal(proposal(diff), want), vim.inspect(proposal(diff)))
    take_back('+z') -- a line of a change takes the whole change back
    want = { 'a', 'B1', 'B2', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n' }
    assert(vim.deep_equal(proposal(diff), want), vim.inspect(proposal(diff)))
    assert(vim.bo.modified and not vim.bo.modifiable, 'the preview: unsaved work, read-only')
    assert(not vim.bo[diff.proposal].modified, 'the hidden proposal is no buffer to write')
  end,

  a_new_file_and_bytes_are_shown_as_they_are = function()
    local diff = review({}, { 'one\0two', '\r' })
    local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    assert(vim.deep_equal(lines, { '@@ -1,0 +1,2 @@', '+one\0two', '+\r' }), vim.inspect(lines))
    diff.is_new = true
    unified.render(diff)
    assert(vim.deep_equal(vim.api.nvim_buf_get_lines(0, 0, -1, false), lines))
  end,
}
