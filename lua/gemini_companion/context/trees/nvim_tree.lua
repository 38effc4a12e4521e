--- nvim-tree: its nodes by line, and its marks (`m`). Lines come from
--- the explorer's own `get_nodes_by_line`, what its Visual-mode mappings use (the public API only
--- knows the cursor's node); the root folder's label is line 1, a node alone (as in its own Visual
--- mappings: a range that starts at the top does not add the whole project).
local M = {}

--- The nodes on lines `first`..`last` of the tree's window, in order.
---@param first integer
---@param last integer
---@return string[]
function M.paths(first, last)
  local core = require('nvim-tree.core')
  local explorer = core.get_explorer()
  if not explorer then
    return {}
  end
  local start = core.get_nodes_starting_line()
  local by_line = explorer:get_nodes_by_line(start)
  local root_shown = require('nvim-tree.view').is_root_folder_visible(core.get_cwd())
  local paths = {}
  for line = first, last do
    local node = by_line[line]
    if line == 1 and root_shown then
      node = first == last and explorer or nil
    end
    table.insert(paths, node and node.absolute_path)
  end
  return paths
end

--- The marked nodes, in the order of their paths (nvim-tree keeps marks unordered).
---@return string[]
function M.marked()
  local paths = {}
  for _, node in ipairs(require('nvim-tree.api').marks.list() or {}) do
    table.insert(paths, node.absolute_path)
  end
  table.sort(paths)
  return paths
end

return M
