--- Reading a JSON settings file: one reader for every module that needs one. The CLIs read their
--- settings with `//` and `/* */` comments (strip-json-comments, then JSON.parse): so does this.
local M = {}

-- A settings file is a few KB; one larger is not read (every edit would re-read it too).
local MAX_BYTES = 1024 * 1024

--- The object in `path`; {} when the file is missing or blank; nil and why when it is not a
--- JSON object (comments allowed), not a regular file or too large.
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
  local ok, value = pcall(vim.json.decode, M.strip_comments(text))
  if not ok or type(value) ~= 'table' then
    return nil, ('%s is not valid JSON, comments allowed (a trailing comma?): nothing was changed'):format(path)
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

--- A JSON text with comments, as the CLIs read it: outside strings, `//` to the end of the line
--- and `/* */` (one never closed runs to the end) become spaces, their line breaks kept. LPeg:
--- 1 MB with 13,000 comments in ~20 ms, about the JSON decode's own (in Lua it took 130 ms).
local commented = (function()
  local P, S = vim.lpeg.P, vim.lpeg.S
  local quoted = P('"') * (P('\\') * P(1) + (1 - S('"\\')) ^ 1) ^ 0 * P('"')
  local comment = P('//') * (1 - P('\n')) ^ 0 + P('/*') * (1 - P('*/')) ^ 0 * (P('*/') + P(-1))
  local blank = comment / function(text)
    return (text:gsub('[^\r\n]', ' '))
  end
  return vim.lpeg.Cs((quoted + blank + (1 - S('"/')) ^ 1 + P(1)) ^ 0)
end)()

--- `text` with each comment made spaces, and a leading byte-order mark dropped (Qwen drops it).
--- The same reading as settings_edit.py's.
---@param text string
---@return string
function M.strip_comments(text)
  text = text:gsub('^\239\187\191', '')
  if not text:find('/', 1, true) then
    return text -- no comment: the common case
  end
  return commented:match(text)
end

return M
