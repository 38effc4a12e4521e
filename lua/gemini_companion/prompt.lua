--- What `:GeminiSend` and `:GeminiAdd` type into an agent's prompt: a self-contained snippet of
--- the selection, and `@path` references escaped the way both CLIs parse them.
local M = {}

--- `@path` escaping of both CLIs: a backslash before each special character (quotes do not work).
---@param path string
---@return string
function M.escape(path)
  return (path:gsub('([%s\\,;!%?%(%)%[%]{}])', '\\%1'))
end

--- The path as the agent should see it: relative to the working directory when inside it.
---@param path string
---@return string
function M.display(path)
  local cwd = vim.fn.getcwd()
  local absolute = vim.fn.fnamemodify(path, ':p')
  if vim.startswith(absolute, cwd .. '/') then
    return absolute:sub(#cwd + 2)
  end
  return absolute
end

--- `@ref` for a file or directory (a directory keeps its trailing slash).
---@param path string
---@return string
function M.reference(path)
  local shown = M.display(path)
  if vim.fn.isdirectory(path) == 1 and not shown:match('/$') then
    shown = shown .. '/'
  end
  return '@' .. M.escape(shown)
end

--- A snippet that stands on its own: where the code is, and the code.
---@param path string
---@param first integer
---@param last integer
---@param lines string[]
---@param filetype string
---@param prompt? string
---@return string
function M.snippet(path, first, last, lines, filetype, prompt)
  local where = first == last and ('line %d'):format(first) or ('lines %d-%d'):format(first, last)
  local fence = '```'
  for _, line in ipairs(lines) do -- a fence the code cannot close
    while line:find(fence, 1, true) do
      fence = fence .. '`'
    end
  end
  local text = ('%s (%s):\n%s%s\n%s\n%s\n'):format(
    M.display(path),
    where,
    fence,
    filetype,
    table.concat(lines, '\n'),
    fence
  )
  if prompt and prompt ~= '' then
    text = text .. prompt
  end
  return text
end

--- The lines a command's range (or the last visual selection, in its own kind) covers.
---@param opts table The user command's opts.
---@return string[] lines, integer first, integer last
function M.selection(opts)
  local buf = vim.api.nvim_get_current_buf()
  local first, last = opts.line1, opts.line2
  local vstart, vend = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  local from_visual = opts.range > 0 and vstart[2] == first and vend[2] == last
  if from_visual and vim.fn.visualmode() ~= 'V' and vim.fn.exists('*getregion') == 1 then
    local kind = vim.fn.visualmode()
    return vim.fn.getregion(vstart, vend, { type = kind == '' and 'v' or kind }), first, last
  end
  if opts.range == 0 then
    first, last = 1, vim.api.nvim_buf_line_count(buf)
  end
  return vim.api.nvim_buf_get_lines(buf, first - 1, last, false), first, last
end

--- The file (or directory) under the cursor in a file tree, or the current file.
---@return string?
function M.current_path()
  local ft = vim.bo.filetype
  local ok, path = pcall(function()
    if ft == 'NvimTree' then
      return require('nvim-tree.api').tree.get_node_under_cursor().absolute_path
    elseif ft == 'neo-tree' then
      return require('neo-tree.sources.manager').get_state('filesystem').tree:get_node().path
    elseif ft == 'oil' then
      local oil = require('oil')
      local entry = oil.get_cursor_entry()
      return entry and (oil.get_current_dir() .. entry.name)
    elseif ft == 'minifiles' then
      return _G.MiniFiles.get_fs_entry().path
    elseif ft == 'netrw' then
      return vim.fs.joinpath(vim.b.netrw_curdir, vim.fn['netrw#Call']('NetrwGetWord'))
    end
  end)
  if ok and type(path) == 'string' and path ~= '' then
    return path
  end
  local name = vim.api.nvim_buf_get_name(0)
  if name ~= '' and vim.bo.buftype == '' then
    return name
  end
end

return M
