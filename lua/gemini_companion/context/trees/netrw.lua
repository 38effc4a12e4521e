--- netrw (Neovim's own): the word netrw reads on a line, in its current directory, and its marked
--- files (`mf`). netrw reads a line only under the cursor: a range moves it there and back.
local M = {}

--- The entries on lines `first`..`last` of the netrw buffer, in order.
---@param first integer
---@param last integer
---@return string[]
function M.paths(first, last)
  local view, paths = vim.fn.winsaveview(), {}
  for line = first, last do
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    local ok, word = pcall(vim.fn['netrw#Call'], 'NetrwGetWord') -- (its banner's lines are none)
    if ok and type(word) == 'string' and word ~= '' and word ~= '../' and word ~= './' then
      table.insert(paths, vim.fs.joinpath(vim.b.netrw_curdir, word))
    end
  end
  vim.fn.winrestview(view)
  return paths
end

--- The marked files (netrw's global list, absolute paths, in the order they were marked).
---@return string[]
function M.marked()
  local list = vim.fn['netrw#Expose']('netrwmarkfilelist')
  return type(list) == 'table' and list or {}
end

return M
