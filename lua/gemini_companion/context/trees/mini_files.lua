--- mini.files (echasnovski/mini.nvim): the entries of the focused explorer window.
local M = {}

--- The entries on lines `first`..`last` of the current mini.files buffer, in order.
---@param first integer
---@param last integer
---@return string[]
function M.paths(first, last)
  local paths = {}
  for line = first, last do
    local entry = _G.MiniFiles.get_fs_entry(0, line)
    table.insert(paths, entry and entry.path)
  end
  return paths
end

return M
