--- Calls into the Python remote plugin, with one clear line instead of a stack trace
--- when the plugin is not registered or its host cannot start.
local M = {}

--- True once a call reached the host (so it is running and must be stopped on exit).
M.started = false

M.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')

local reported = {}

---@param message string
local function report_once(message)
  if not reported[message] then
    reported[message] = true
    vim.notify('gemini-companion: ' .. message, vim.log.levels.ERROR)
  end
end

---@return boolean
function M.registered()
  -- The manifest defines remote functions lazily, through a FuncUndefined autocommand.
  return vim.fn.exists('*GeminiCompanionNotify') == 1 or vim.fn.exists('#FuncUndefined#GeminiCompanionNotify') == 1
end

---@return string
function M.python()
  local prog = vim.g.python3_host_prog
  return type(prog) == 'string' and vim.fn.expand(prog) or 'python3'
end

---@param sync boolean
---@param method string
---@param params? table
---@return any result, string? error
local function call(sync, method, params)
  if not M.registered() then
    local message = 'the remote plugin is not registered: run :UpdateRemotePlugins, then restart Neovim'
    report_once(message)
    return nil, message
  end
  local fn = sync and 'GeminiCompanionRequest' or 'GeminiCompanionNotify'
  local ok, result = pcall(vim.fn[fn], method, params or vim.empty_dict())
  if not ok then
    local message = ('the Python host (%s) failed: run `make install` in %s, then restart Neovim'):format(
      M.python(),
      M.root
    ) .. ' (details: :checkhealth gemini_companion)'
    report_once(message)
    return nil, message
  end
  M.started = true
  return result
end

--- Fire and forget: never waits for the host (after the host process is up).
---@param method string
---@param params? table
function M.notify(method, params)
  return call(false, method, params)
end

--- Waits for the host's answer. Only for calls that must finish first.
---@param method string
---@param params? table
function M.request(method, params)
  return call(true, method, params)
end

return M
