--- The plugin's one way to speak to the user: one line, one prefix.
local M = {}

local PREFIX = 'gemini-companion: '

--- The text with the prefix, once.
---@param text string
---@return string
function M.prefixed(text)
  return vim.startswith(text, PREFIX) and text or PREFIX .. text
end

---@param text string
---@param level? 'debug'|'info'|'warn'|'error'
function M.notify(text, level)
  vim.notify(M.prefixed(text), vim.log.levels[(level or 'info'):upper()] or vim.log.levels.INFO)
end

--- Progress: shown in the command line, kept out of :messages.
---@param text string
function M.echo(text)
  vim.api.nvim_echo({ { M.prefixed(text) } }, false, {})
end

return M
