--- neo-tree (nvim-neo-tree/neo-tree.nvim): the nodes of the source shown in the current window
--- (filesystem, buffers, git_status, or any other whose nodes have a path). Its root (the project)
--- is a node alone: a range that starts at the top does not add the whole project.
local M = {}

--- The nodes on lines `first`..`last` of the tree's window, in order (a message line is none).
---@param first integer
---@param last integer
---@return string[]
function M.paths(first, last)
  local state = require('neo-tree.sources.manager').get_state_for_window()
  if not (state and state.tree) then
    return {}
  end
  local paths = {}
  for line = first, last do
    local node = state.tree:get_node(line)
    if node and node.type ~= 'message' and (first == last or node:get_depth() > 1) then
      table.insert(paths, node.path)
    end
  end
  return paths
end

return M
