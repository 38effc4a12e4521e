--- The plugin's one way to speak to the user: one line, one prefix.
local M = {}

local PREFIX = 'gemini-companion: '

---@param text string
---@param level? 'debug'|'info'|'warn'|'error'
function M.notify(text, level)
  if vim.startswith(text, PREFIX) then -- never twice
    text = text:sub(#PREFIX + 1)
  end
  vim.notify(PREFIX .. text, vim.log.levels[(level or 'info'):upper()] or vim.log.levels.INFO)
end

return M
