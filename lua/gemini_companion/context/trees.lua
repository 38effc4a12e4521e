--- The nodes a user picked in a file tree, for `:GeminiAdd`: the node under the cursor, every node
--- of a range (`:'<,'>GeminiAdd`, or a `<Cmd>` mapping in Visual mode), or, with no range, the
--- tree's marks where it has them. Each tree is a file of `context/trees/` named after it; a tree
--- plugin that is not loaded is never loaded here.
local M = {}
local H = {}

---@class gemini_companion.Tree
---@field paths fun(first: integer, last: integer): string[] The nodes on these lines of the current window, in order.
---@field marked? fun(): string[] The tree's marked nodes (none: an empty list).

--- The tree module of each file tree's filetype.
local TREES = {
  NvimTree = 'nvim_tree',
  ['neo-tree'] = 'neo_tree',
  oil = 'oil',
  minifiles = 'mini_files',
  netrw = 'netrw',
}

--- The paths picked in the current window's file tree, in order, each once; nil when the window
--- is no file tree. `marked`: they are the tree's marks (the user is told how many).
---@param opts? { range?: integer, line1?: integer, line2?: integer } A user command's range.
---@return string[]? paths, boolean? marked
function M.picked(opts)
  local tree = H.tree()
  if not tree then
    return nil
  end
  local first, last = H.lines(opts)
  if not first and tree.marked then
    local ok, marks = pcall(tree.marked)
    if ok and type(marks) == 'table' and #marks > 0 then
      return H.unique(marks), true
    end
  end
  local line = vim.api.nvim_win_get_cursor(0)[1]
  local ok, paths = pcall(tree.paths, first or line, last or line)
  return ok and type(paths) == 'table' and H.unique(paths) or {}
end

--- The node under the cursor in a file tree (nil: none, or no file tree).
---@return string?
function M.under_cursor()
  local tree = H.tree()
  if not tree then
    return nil
  end
  local line = vim.api.nvim_win_get_cursor(0)[1]
  local ok, paths = pcall(tree.paths, line, line)
  return ok and paths[1] or nil
end

--- The current window's tree, if its filetype is one (then its plugin is loaded).
---@return gemini_companion.Tree?
function H.tree()
  local name = TREES[vim.bo.filetype]
  return name and require('gemini_companion.context.trees.' .. name) or nil
end

--- The range's lines (a command's, or the Visual selection being made), or nil: no range.
---@param opts? { range?: integer, line1?: integer, line2?: integer }
---@return integer?, integer?
function H.lines(opts)
  if opts and (opts.range or 0) > 0 then
    return opts.line1, opts.line2
  end
  if vim.fn.mode():match('^[vV\22]') then
    local a, b = vim.fn.line('v'), vim.fn.line('.')
    return math.min(a, b), math.max(a, b)
  end
end

--- The strings that are paths, each once, in their first place.
---@param paths any[]
---@return string[]
function H.unique(paths)
  local seen, out = {}, {}
  for _, path in ipairs(paths) do
    if type(path) == 'string' and path ~= '' and not seen[path] then
      seen[path] = true
      table.insert(out, path)
    end
  end
  return out
end

return M
