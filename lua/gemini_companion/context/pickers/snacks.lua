--- snacks.nvim's part of the picker actions (pickers.lua): the files of the selected items, or of
--- the item under the cursor, to :GeminiAdd's code, from any snacks picker and its explorer.
--- Loaded only when the action runs.
local M = {}

--- The action: a picker closes; the explorer stays, its selection cleared (as its own actions do).
---@param picker table
function M.action(picker)
  local util = require('snacks.picker.util')
  local paths = {}
  for _, item in ipairs(picker:selected({ fallback = true })) do
    local path = util.path(item)
    if path then
      table.insert(paths, path)
    end
  end
  if picker.opts.source == 'explorer' then
    picker.list:set_selected()
  else
    picker:close()
  end
  require('gemini_companion.pickers').add(paths)
end

return M
