--- Placeholders in a prompt the user types (`:GeminiSend`, `agents.ask()`): `{file}`, `{position}`,
--- `{selection}`, `{diagnostics}`, `{quickfix}` become text about the editor as it is now. One pass:
--- what a placeholder brings (a diagnostic's message, a quickfix entry) is never scanned for more.
--- It is text, never keys (agents.send makes every byte safe to paste) and never refers to a file
--- the CLI would attach: each `@` in it gets a backslash, as in a snippet. No expansion starts
--- with `/` (the CLIs' slash commands) or `!` (Gemini's shell mode): a name is in backticks.
local prompt = require('gemini_companion.agents.prompt')

local M = {}

---@class gemini_companion.PromptContext
---@field buf integer the buffer the prompt is about
---@field win integer its window (the cursor for `{position}`)
---@field first? integer the range's first line, when there is a range or a selection
---@field last? integer its last line
---@field lines? string[] what the range or the selection holds

local render = {} ---@type table<string, fun(ctx: gemini_companion.PromptContext): string?, string?>

--- The placeholders' names, for completion and the help.
---@return string[]
function M.names()
  local names = vim.tbl_keys(render)
  table.sort(names)
  return names
end

--- Whether `text` holds a placeholder.
---@param text string
---@return boolean
function M.any(text)
  for name in text:gmatch('{(%a+)}') do
    if render[name] then
      return true
    end
  end
  return false
end

--- `text` with each placeholder replaced (others, such as `{x}`, stay as typed); nil and the
--- reason when one cannot be filled (`{selection}` without a selection).
---@param text string
---@param ctx gemini_companion.PromptContext
---@return string? expanded, string? why
function M.expand(text, ctx)
  local why
  local expanded = text:gsub('{(%a+)}', function(name)
    if not render[name] or why then
      return nil
    end
    if name ~= 'quickfix' and not vim.api.nvim_buf_is_valid(ctx.buf) then
      why = ('{%s}: the buffer it was about is gone'):format(name)
      return nil
    end
    local value, err = render[name](ctx)
    why = why or err
    return value
  end)
  if why then
    return nil, why
  end
  return expanded
end

--- The context of the current window: its buffer, cursor, and the command's range (`opts` of a
--- user command, or nil: no range).
---@param opts? table
---@return gemini_companion.PromptContext
function M.context(opts)
  local ctx = { buf = vim.api.nvim_get_current_buf(), win = vim.api.nvim_get_current_win() }
  local visual = vim.fn.mode():match('^[vV\22]')
  if (opts and opts.range > 0) or visual then
    ctx.lines, ctx.first, ctx.last = prompt.selection(opts or { range = 0 })
  end
  return ctx
end

-- --- each placeholder ---------------------------------------------------------------------------

--- Text from outside (a name, a message) on one line, its `@` escaped (no file is attached).
---@param text string
---@return string
local function data(text)
  return (prompt.text(text, true):gsub('@', '\\@'))
end

--- A message on one line: its line breaks (and the blanks around them) as one space.
---@param text string
---@return string
local function message_line(text)
  return data((tostring(text):gsub('%s*\r?\n%s*', ' ')))
end

--- The buffer's file name as the agent should see it, in backticks; nil and why for `{placeholder}`.
---@param buf integer
---@param placeholder string
---@return string? name, string? why
local function file_of(buf, placeholder)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return nil, ('{%s}: this buffer has no file'):format(placeholder)
  end
  return require('gemini_companion.agents.at_path').code(data(prompt.display(name)))
end

function render.file(ctx)
  return file_of(ctx.buf, 'file')
end

function render.position(ctx)
  local name, why = file_of(ctx.buf, 'position')
  local shown = vim.api.nvim_win_is_valid(ctx.win) and vim.api.nvim_win_get_buf(ctx.win) == ctx.buf
  -- Its window closed (a prompt written in :GeminiPrompt meanwhile): where the cursor last was.
  local row, col = unpack(shown and vim.api.nvim_win_get_cursor(ctx.win) or vim.api.nvim_buf_get_mark(ctx.buf, '"'))
  row = math.max(row, 1)
  return name and ('%s line %d, column %d'):format(name, row, col + 1), why
end

function render.selection(ctx)
  if not ctx.lines then
    return nil, '{selection}: nothing selected (give a range or select)'
  end
  local name = vim.api.nvim_buf_get_name(ctx.buf)
  return prompt.snippet(name ~= '' and name or '[No Name]', ctx.first, ctx.last, ctx.lines, vim.bo[ctx.buf].filetype)
end

local SEVERITY = { 'error', 'warning', 'info', 'hint' }

function render.diagnostics(ctx)
  local name = file_of(ctx.buf, 'diagnostics') or '[No Name]'
  local where = ctx.first and ('lines %d-%d of %s'):format(ctx.first, ctx.last, name) or name
  local items = {}
  for _, d in ipairs(vim.diagnostic.get(ctx.buf)) do
    if not ctx.first or (d.lnum + 1 >= ctx.first and d.lnum + 1 <= ctx.last) then
      local source = d.source and (' (%s)'):format(message_line(d.source)) or ''
      local item = ('- line %d, column %d, %s: %s%s'):format(
        d.lnum + 1,
        d.col + 1,
        SEVERITY[d.severity] or 'note',
        message_line(d.message),
        source
      )
      table.insert(items, item)
    end
  end
  if #items == 0 then
    return ('No diagnostics in %s.'):format(where)
  end
  return ('Diagnostics in %s:\n%s'):format(where, table.concat(items, '\n'))
end

function render.quickfix()
  local items = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    local name = item.bufnr > 0 and file_of(item.bufnr, 'quickfix')
    local at = name and ('%s line %d'):format(name, item.lnum) or 'no file'
    table.insert(items, ('- %s: %s'):format(at, message_line(item.text)))
  end
  if #items == 0 then
    return 'The quickfix list is empty.'
  end
  return ('Quickfix list:\n%s'):format(table.concat(items, '\n'))
end

return M
