--- The plugin's one way to speak to the user: one line, one prefix.
local M = {}
local H = {}

local PREFIX = 'gemini-companion: '

--- The text with the prefix, once.
---@param text string
---@return string
function M.prefixed(text)
  return vim.startswith(text, PREFIX) and text or PREFIX .. text
end

--- A warning or an error also goes to the host's log (`:GeminiCompanion log`), unless it came from there.
---@param text string
---@param level? 'debug'|'info'|'warn'|'error'
---@param logged? boolean the host said it: in its log already
function M.notify(text, level, logged)
  vim.notify(M.prefixed(text), vim.log.levels[(level or 'info'):upper()] or vim.log.levels.INFO)
  if not logged then
    H.log(text, level)
  end
end

--- One line that fits the command line, kept in :messages. For what is said as an agent starts:
--- a longer one stops Neovim at a hit-enter prompt, which also holds back the terminal's answers
--- to the queries a starting CLI sends (Gemini then finds them typed into its prompt).
---@param text string
---@param level? 'info'|'warn'|'error'
---@param names? string[] Names (paths) that follow `text`, joined by ', ': shortened in the middle
--- so that all of `text` (the reason) shows however long they are.
function M.brief(text, level, names)
  vim.cmd.redraw() -- clears what a confirm() left, and updates v:echospace
  local line = M.prefixed(text)
  local room = math.max(vim.v.echospace, 10)
  if names then
    local left = room - 1 - vim.fn.strdisplaywidth(line)
    line = line .. M.middle(table.concat(names, ', '), math.max(left, 9))
  end
  if vim.fn.strdisplaywidth(line) > room then
    line = vim.fn.strcharpart(line, 0, room - 1) .. '…'
  end
  local group = ({ warn = 'WarningMsg', error = 'ErrorMsg' })[level or 'info']
  vim.api.nvim_echo({ { line, group } }, true, {})
  H.log(text, level)
end

--- `text` in at most `width` cells: its start and its end, with `…` between.
---@param text string
---@param width integer
---@return string
function M.middle(text, width)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local chars = vim.fn.strchars(text)
  --- The longest start (or end) of `text` in `cells` cells.
  local function part(cells, from_end)
    for take = math.min(cells, chars), 1, -1 do
      local piece = from_end and vim.fn.strcharpart(text, chars - take) or vim.fn.strcharpart(text, 0, take)
      if vim.fn.strdisplaywidth(piece) <= cells then
        return piece
      end
    end
    return ''
  end
  local tail = math.floor((width - 1) / 2)
  return part(width - 1 - tail, false) .. '…' .. part(tail, true)
end

--- Progress: shown in the command line, kept out of :messages.
---@param text string
function M.echo(text)
  vim.api.nvim_echo({ { M.prefixed(text) } }, false, {})
end

--- A warning or an error, to the host's log too (the whole line: the user's may be cut).
---@param text string
---@param level? string
function H.log(text, level)
  local host = package.loaded['gemini_companion.host'] -- none started otherwise
  if host and (level == 'warn' or level == 'error') then
    host.notify('log', { level = level, text = text }) -- a notification: never waits
  end
end

return M
