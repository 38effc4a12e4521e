--- telescope.nvim's part of the picker actions (pickers.lua): the paths of its selected entries,
--- or of the entry under the cursor, to :GeminiAdd's code. Loaded only when the action runs.
local M = {}

--- The action: close the picker (the agent's window may open), then add.
---@param prompt_bufnr integer
function M.action(prompt_bufnr)
  local state = require('telescope.actions.state')
  local picker = state.get_current_picker(prompt_bufnr)
  local entries = picker:get_multi_selection()
  if #entries == 0 then
    entries = { state.get_selected_entry() }
  end
  local paths = {}
  for _, entry in ipairs(entries) do
    -- A file entry's path is absolute; else its name is relative to the picker's folder.
    local path = entry.path or entry.filename
    if type(path) == 'string' and path ~= '' then
      local cwd = entry.cwd or picker.cwd
      table.insert(paths, (path:sub(1, 1) == '/' or not cwd) and path or vim.fs.joinpath(cwd, path))
    end
  end
  require('telescope.actions').close(prompt_bufnr)
  require('gemini_companion.pickers').add(paths)
end

return M
