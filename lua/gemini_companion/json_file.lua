--- Reading a JSON settings file: one reader for every module that needs one.
local M = {}

-- A settings file is a few KB; one larger is not read (every edit would re-read it too).
local MAX_BYTES = 1024 * 1024

--- The object in `path`; {} when the file is missing or blank; nil and why when it is not a
--- JSON object (a file with comments, say), not a regular file or too large.
---@param path string
---@return table? value, string? error
function M.read(path)
  local text, why = M.text(path)
  if why then
    return nil, ('%s cannot be read (%s): nothing was changed'):format(path, why)
  end
  if not text or vim.trim(text) == '' then
    return {}
  end
  local ok, value = pcall(vim.json.decode, text)
  if not ok or type(value) ~= 'table' then
    return nil, ('%s is not plain JSON (comments?): nothing was changed'):format(path)
  end
  return value
end

--- The file's text (nil when it does not exist), or nil and why it cannot be read.
---@param path string
---@return string? text, string? why
function M.text(path)
  local text, why = require('gemini_companion.files').read(path, MAX_BYTES)
  if not text and why and not vim.startswith(why, 'ENOENT') and not vim.startswith(why, 'ENOTDIR') then
    return nil, why
  end
  return text
end

return M
