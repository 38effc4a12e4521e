--- fzf-lua's part of the picker actions (pickers.lua): the files of the entries fzf hands over
--- (the selected ones, or the current one when none is selected), to :GeminiAdd's code. Loaded
--- only when the action runs.
local M = {}

--- The action, as fzf-lua calls it.
---@param selected string[]
---@param opts table
function M.action(selected, opts)
  local path = require('fzf-lua').path
  local paths = {}
  for _, entry in ipairs(selected) do
    -- Its own reading of an entry: icons and colors taken off, the picker's folder put before it.
    local file = path.entry_to_file(entry, opts)
    if type(file.path) == 'string' and file.path ~= '' then
      table.insert(paths, file.path)
    end
  end
  require('gemini_companion.pickers').add(paths)
end

return M
