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

--- `text` with each comment made spaces (its line breaks kept), as the CLIs read it: outside
--- strings, `//` to the end of the line and `/* */` (one never closed runs to the end). A
--- leading byte-order mark goes too (Qwen drops it). The same reading as settings_edit.py's.
---@param text string
---@return string
function M.strip_comments(text)
  text = text:gsub('^\239\187\191', '')
  local parts, done, pos = {}, 1, 1
  while true do
    local at = text:find('["/]', pos)
    if not at then
      break
    end
    local next_byte = text:sub(at + 1, at + 1)
    if text:sub(at, at) == '"' then -- a string: to its closing quote (a backslash escapes the next byte)
      pos = at + 1
      while true do
        local stop = text:find('["\\]', pos)
        if not stop then
          return text -- never closed: the JSON reader says so
        end
        pos = stop + (text:sub(stop, stop) == '\\' and 2 or 1)
        if text:sub(stop, stop) == '"' then
          break
        end
      end
    elseif next_byte == '/' or next_byte == '*' then
      local stop = next_byte == '/' and text:find('\n', at + 2, true) or nil
      if next_byte == '*' then
        local close = text:find('*/', at + 2, true)
        stop = close and close + 2 or nil
      end
      stop = stop or #text + 1 -- to the end of the text
      table.insert(parts, text:sub(done, at - 1))
      table.insert(parts, (text:sub(at, stop - 1):gsub('[^\r\n]', ' ')))
      done, pos = stop, stop
    else
      pos = at + 1
    end
  end
  table.insert(parts, text:sub(done))
  return table.concat(parts)
end

return M
