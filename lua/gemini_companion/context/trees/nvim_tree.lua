--- nvim-tree: its nodes by line, and its marks (`m`). Lines come from the explorer's own
--- `get_nodes_by_line`, what its Visual-mode mappings use (the public API, which the cursor's node
--- goes through, knows no other line); the root folder's label is line 1, a
--- node alone (as in its own Visual mappings: a range that starts at the top does not add the
--- whole project).
local M = {}
local H = {}

--- The nodes on lines `first`..`last` of the tree's window, in order.
---@param first integer
---@param last integer
---@return string[]
function M.paths(first, last)
  local line = vim.api.nvim_win_get_cursor(0)[1]
  if first == line and last == line then
    local node = require('nvim-tree.api').tree.get_node_under_cursor()
    return { node and node.absolute_path }
  end
  return H.by_line(first, last)
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

--- The explorer's nodes on those lines (nvim-tree's internals: an error where they differ).
---@param first integer
---@param last integer
---@return string[]
function H.by_line(first, last)
  local core = require('nvim-tree.core')
  local explorer = core.get_explorer()
  if not explorer then
    return {}
  end
  local by_line = explorer:get_nodes_by_line(core.get_nodes_starting_line())
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

return M
