--- The host's log (`log.level`): where it lives, what the host is told of it, and
--- `:GeminiCompanion log`. The host writes it (rplugin/python3/gemini_companion/log.py), off
--- Neovim's loop; Neovim's own warnings reach it through the host (message.notify).
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')

local M = {}

--- The log file: in a folder of its own (0700) under Neovim's log directory; the one old file
--- beside it, `companion.log.1`.
---@return string
function M.path()
  return vim.fs.joinpath(vim.fn.stdpath('log') --[[@as string]], 'gemini-companion', 'companion.log')
end

--- What the `start` call tells the host.
---@return {level: string, path: string}
function M.settings()
  return { level = config.options.log.level, path = M.path() }
end

--- `:GeminiCompanion log`: the log in a tab of its own, read-only, reloaded when shown again.
function M.open()
  local path = M.path()
  local stat = vim.uv.fs_lstat(path)
  if not stat then
    local level = config.options.log.level
    local why = level == 'off' and "log.level is 'off'" or ("log.level '%s': nothing to say yet"):format(level)
    return message.notify(('no log at %s (%s)'):format(path, why))
  end
  if stat.type ~= 'file' then -- a link planted there is never opened (nor written: the host refuses it)
    return message.notify(('not opening the log: %s is a %s, not a file'):format(path, stat.type), 'error')
  end
  vim.cmd('tabedit ' .. vim.fn.fnameescape(path))
  vim.bo.readonly, vim.bo.modifiable, vim.bo.autoread = true, false, true
  vim.cmd.checktime({ args = { tostring(vim.api.nvim_get_current_buf()) } })
  vim.cmd.normal({ args = { 'G' }, bang = true }) -- the newest lines
end

return M
