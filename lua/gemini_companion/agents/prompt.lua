--- What `:GeminiSend` and `:GeminiAdd` type into an agent's prompt: a self-contained snippet of
--- the selection, and `@path` references escaped the way both CLIs parse them. Everything is text:
--- `M.text` makes any string safe to paste (no byte of it can act as a key), names are used
--- literally (never expanded, globbed or evaluated).
local M = {}

local REPLACEMENT = '\239\191\189' -- U+FFFD

-- C0 controls and DEL → their visible Unicode control pictures (U+2400 + code, DEL → U+2421).
local PICTURES = { ['\127'] = '\226\144\161' }
for code = 0, 31 do
  PICTURES[string.char(code)] = '\226\144' .. string.char(0x80 + code)
end

---@param b integer?
---@return boolean
local function continuation(b)
  return b ~= nil and b >= 0x80 and b <= 0xBF
end

--- The length of the well-formed UTF-8 sequence at `i` (Unicode table 3-7), or 0.
---@param s string
---@param i integer
---@return integer
local function sequence(s, i)
  local b1, b2, b3, b4 = s:byte(i, i + 3)
  -- The second byte's range is narrower after some leads: no overlong forms, no surrogates, ≤ U+10FFFF.
  local low, high =
    (b1 == 0xE0 and 0xA0) or (b1 == 0xF0 and 0x90) or 0x80, (b1 == 0xED and 0x9F) or (b1 == 0xF4 and 0x8F) or 0xBF
  local second = b2 ~= nil and b2 >= low and b2 <= high
  if b1 >= 0xC2 and b1 <= 0xDF then
    return continuation(b2) and 2 or 0
  elseif b1 >= 0xE0 and b1 <= 0xEF then
    return (second and continuation(b3)) and 3 or 0
  elseif b1 >= 0xF0 and b1 <= 0xF4 then
    return (second and continuation(b3) and continuation(b4)) and 4 or 0
  end
  return 0
end

--- Only well-formed UTF-8 with no C1 control (U+0080-U+009F, among them the 8-bit CSI): each
--- other byte becomes U+FFFD, each C1 control too.
---@param text string
---@return string
local function utf8_only(text)
  local out, kept, pos = {}, 1, 1 -- kept: where the text not yet copied to `out` starts
  while true do
    local at = text:find('[\128-\255]', pos)
    if not at then
      break
    end
    local length = sequence(text, at)
    pos = at + math.max(length, 1)
    if length == 0 or (length == 2 and text:byte(at) == 0xC2 and text:byte(at + 1) <= 0x9F) then
      table.insert(out, text:sub(kept, at - 1) .. REPLACEMENT)
      kept = pos
    end
  end
  table.insert(out, text:sub(kept))
  return table.concat(out)
end

--- Text as text: what the agent receives can only ever be typed characters. CRLF becomes LF;
--- LF and TAB stay (`one_line`: they become pictures too); every other C0 control and DEL becomes
--- its control picture (ESC → ␛, so no escape sequence, no paste-end marker, no ^C/^D/^U/CR);
--- C1 controls and bytes that are not UTF-8 become U+FFFD.
---@param text string
---@param one_line? boolean A name: nothing in it starts a new line.
---@return string
function M.text(text, one_line)
  text = text:gsub('\r\n', '\n'):gsub(one_line and '[%z\1-\31\127]' or '[%z\1-\8\11-\31\127]', PICTURES)
  return utf8_only(text)
end

--- A bracketed paste of `text` (from `M.text`: nothing in it can end the paste early), the same
--- bytes for every provider that types.
---@param text string
---@return string
function M.bracketed(text)
  return '\27[200~' .. text .. '\27[201~'
end

--- `@path` escaping of both CLIs: a backslash before each character that ends a reference or is
--- special to their parsers (what their own completion escapes; quotes do not work). No name with
--- a backslash is referred to (`M.globbed`).
---@param path string
---@return string
function M.escape(path)
  return (path:gsub('([%s,;!%?%(%)%[%]{}|%*%$`\'"#&<>~])', '\\%1'))
end

--- The path, absolute, taken literally: no `~`, `$VAR`, `%` or glob is expanded.
---@param path string
---@return string
function M.absolute(path)
  return path:sub(1, 1) == '/' and path or vim.fs.joinpath(vim.fn.getcwd(), path)
end

--- The path as the agent should see it: relative to the working directory when inside it.
---@param path string
---@return string
function M.display(path)
  local cwd, absolute = vim.fn.getcwd(), M.absolute(path)
  if absolute == cwd then
    return '.'
  end
  local inside = cwd == '/' and cwd or cwd .. '/'
  return vim.startswith(absolute, inside) and absolute:sub(#inside + 1) or absolute
end

--- Whether `cli` would read `@path` as a glob pattern, not as the file. Both CLIs read the files
--- they found through a glob library: Qwen Code escapes a name's `*?[]()` (not a backslash); Gemini
--- CLI escapes nothing (and matches without case, which no name can avoid).
---@param path string
---@param cli? 'gemini'|'qwen'
---@return boolean
function M.globbed(path, cli)
  if path:find('\\', 1, true) then
    return true
  end
  return cli ~= 'qwen' and (path:find('[%*%?%[{]') or path:find('[+@!]%(')) ~= nil
end

--- `@ref` for a file or directory (a directory ends in a slash). A relative one starts with `./`:
--- the CLIs read a bare `@name` first as one of their agents, sessions, MCP servers or resources.
---@param path string
---@param directory? boolean what a stat off the main loop found (at_path.look); nil: look now
---@return string
function M.reference(path, directory)
  local shown = M.display(path)
  if shown == '.' then
    shown = './'
  elseif shown:sub(1, 1) ~= '/' then
    shown = './' .. shown
  end
  if directory == nil then
    directory = vim.fn.isdirectory(M.absolute(path)) == 1
  end
  if directory and not shown:match('/$') then
    shown = shown .. '/'
  end
  return '@' .. M.escape(M.text(shown, true))
end

--- A snippet that stands on its own: where the code is, and the code. Its text is the code's own:
--- every `@` gets a backslash, so a CLI attaches no file it names (both expand `@path` in a prompt).
---@param path string
---@param first integer
---@param last integer
---@param lines string[]
---@param filetype string
---@param prompt? string
---@return string
function M.snippet(path, first, last, lines, filetype, prompt)
  local where = first == last and ('line %d'):format(first) or ('lines %d-%d'):format(first, last)
  local longest = 2 -- a fence the code cannot close: longer than any run of backticks in it
  for _, line in ipairs(lines) do
    for run in line:gmatch('`+') do
      longest = math.max(longest, #run)
    end
  end
  local fence = ('`'):rep(longest + 1)
  -- "From": a prompt that starts with "/" (an absolute path) would be a slash command.
  local text = ('From %s (%s):\n%s%s\n%s\n%s\n'):format(
    M.text(M.display(path), true),
    where,
    fence,
    filetype,
    table.concat(lines, '\n'),
    fence
  )
  text = text:gsub('@', '\\@')
  if prompt and prompt ~= '' then
    text = text .. prompt
  end
  return text
end

--- The lines a command's range (or the last visual selection, in its own kind) covers; run
--- from Visual mode still on (a `<Cmd>` mapping: no range), the selection being made.
---@param opts table The user command's opts.
---@return string[] lines, integer first, integer last
function M.selection(opts)
  local buf = vim.api.nvim_get_current_buf()
  local first, last = opts.line1, opts.line2
  local vstart, vend = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  local kind = vim.fn.visualmode()
  local from_visual = opts.range > 0 and vstart[2] == first and vend[2] == last
  local visual = vim.fn.mode():match('^[vV\22]')
  if opts.range == 0 and visual then
    vstart, vend, kind = vim.fn.getpos('v'), vim.fn.getpos('.'), visual
    first, last = math.min(vstart[2], vend[2]), math.max(vstart[2], vend[2])
    from_visual = true
  end
  if from_visual and kind ~= 'V' and vim.fn.exists('*getregion') == 1 then
    local lines = vim.fn.getregion(vstart, vend, { type = kind == '' and 'v' or kind })
    for i, line in ipairs(lines) do -- Vimscript lists hold a NUL as "\n"; the API's lines hold "\0"
      lines[i] = line:gsub('\n', '\0')
    end
    return lines, first, last
  end
  if opts.range == 0 and not visual then
    first, last = 1, vim.api.nvim_buf_line_count(buf)
  end
  return vim.api.nvim_buf_get_lines(buf, first - 1, last, false), first, last
end

--- The file (or directory) under the cursor in a file tree, or the current file.
---@return string?
function M.current_path()
  local node = require('gemini_companion.context.trees').under_cursor()
  if node then
    return node
  end
  local name = vim.api.nvim_buf_get_name(0)
  if name ~= '' and vim.bo.buftype == '' then
    return name
  end
end

return M
