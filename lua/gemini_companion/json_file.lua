--- Reading a JSON settings file: one reader for every module that needs one.
local M = {}

--- The object in `path`; {} when the file is missing or blank; nil and why when it is not a
--- JSON object (a file with comments, say).
---@param path string
---@return table? value, string? error
function M.read(path)
  local text = require('gemini_companion.files').read(path)
  if not text or vim.trim(text) == '' then
    return {}
  end
  local ok, value = pcall(vim.json.decode, text)
  if not ok or type(value) ~= 'table' then
    return nil, ('%s is not plain JSON (comments?): nothing was changed'):format(path)
  end
  return value
end

return M
