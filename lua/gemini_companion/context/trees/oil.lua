--- oil.nvim (stevearc/oil.nvim): the entries of the directory buffer; `..` is no pick.
local M = {}

--- The entries on lines `first`..`last` of the current oil buffer, in order.
---@param first integer
---@param last integer
---@return string[]
function M.paths(first, last)
  local oil = require('oil')
  local dir = oil.get_current_dir(0)
  if not dir then
    return {}
  end
  local paths = {}
  for line = first, last do
    local entry = oil.get_entry_on_line(0, line)
    if entry and entry.name ~= '..' then
      table.insert(paths, dir .. entry.name)
    end
  end
  return paths
end

return M
