--- netrw (Neovim's own): the word netrw reads on a line, in its folder, and its marked files
--- (`mf`). netrw reads a line only under the cursor: a range moves it there and back. In its tree
--- listing (`g:netrw_liststyle` 3) a line's folder is netrw's own tree path of that line, never the
--- folder last opened; the tree's top is a node alone (a range from the top adds no whole project).
local M = {}
local H = {}

--- The entries on lines `first`..`last` of the netrw buffer, in order.
---@param first integer
---@param last integer
---@return string[]
function M.paths(first, last)
  local view, paths = vim.fn.winsaveview(), {}
  for line = first, last do
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    local ok, path = pcall(H.path) -- (its banner's lines are none)
    if ok and path and (first == last or not H.is_top(path)) then
      table.insert(paths, path)
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

--- The path of the cursor's line, or nil (`..`, `.`).
---@return string?
function H.path()
  local word = vim.fn['netrw#Call']('NetrwGetWord')
  if type(word) ~= 'string' or word == '' or word == '../' or word == './' then
    return nil
  end
  if vim.w.netrw_liststyle == 3 and vim.w.netrw_treetop then
    local dir = vim.fn['netrw#Call']('NetrwTreePath', vim.w.netrw_treetop) -- a folder's line: its own path
    return word:sub(-1) == '/' and dir or vim.fs.joinpath(dir, word)
  end
  return vim.fs.joinpath(vim.b.netrw_curdir, word)
end

---@param path string
---@return boolean
function H.is_top(path)
  local top = vim.w.netrw_treetop
  return vim.w.netrw_liststyle == 3 and top ~= nil and path:gsub('/+$', '') == top:gsub('/+$', '')
end

return M
