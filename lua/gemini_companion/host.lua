--- Calls into the Python remote plugin, with one clear line instead of a stack trace
--- when the plugin is not registered or its host cannot start.
local M = {}

--- True once a call reached the host (so it is running and must be stopped on exit).
M.started = false

M.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')

--- Why the last call could not reach the host (nil once one did).
---@type string?
M.problem = nil

---@param message string
local function fail(message)
  M.problem = message
  local state = require('gemini_companion.state')
  state.current.state, state.current.error = 'failed', message
  vim.notify('gemini-companion: ' .. message, vim.log.levels.ERROR)
  return nil, message
end

--- The host's RPC channel, once a call reached it.
---@type integer?
M.channel = nil

local WATCH_MS = 2000
local HOST_EXITED = 'the Python host exited unexpectedly: restart Neovim to start the server again'

--- The host died under us (killed, crashed): say so once, and take back what it advertised,
--- so no new terminal points a CLI at a dead port. A remote plugin host cannot be respawned
--- inside a running Neovim (its functions are bound to the dead channel).
local function on_host_exit()
  local state = require('gemini_companion.state')
  for _, path in ipairs(state.current.discovery_files or {}) do
    os.remove(path)
  end
  for key in pairs(state.env) do
    vim.env[key] = nil
  end
  if package.loaded['gemini_companion.context'] then
    require('gemini_companion.context').detach()
  end
  state.current.discovery_files, state.current.clients, state.current.running = {}, {}, false
  fail(HOST_EXITED)
end

--- Whether the host process behind the channel is still there.
---@return boolean
function M.alive()
  return M.channel == nil or vim.api.nvim_get_chan_info(M.channel).id ~= nil
end

local function watch()
  local ok, channel = pcall(vim.fn['remote#host#Require'], 'python3')
  if not ok or channel == 0 then
    return
  end
  M.channel = channel
  local timer = assert(vim.uv.new_timer())
  timer:start(WATCH_MS, WATCH_MS, function()
    vim.schedule(function()
      if not timer:is_closing() and not M.alive() then
        timer:close()
        on_host_exit()
      end
    end)
  end)
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
--- True when the remote plugin is registered; otherwise says what to run, in one line.
---@return boolean
function M.ensure_registered()
  if M.registered() then
    return true
  end
  fail('the remote plugin is not registered: run :UpdateRemotePlugins, then restart Neovim')
  return false
end

local function call(sync, method, params)
  if not M.ensure_registered() then
    return nil, M.problem
  end
  if M.started and not M.alive() then
    return fail(HOST_EXITED)
  end
  local prog = vim.g.python3_host_prog
  if type(prog) == 'string' and vim.fn.executable(vim.fn.expand(prog)) == 0 then
    return fail(('the Python host %s does not exist: run `make install` in %s, then restart Neovim'):format(prog, M.root))
  end
  local fn = sync and 'GeminiCompanionRequest' or 'GeminiCompanionNotify'
  local ok, result = pcall(vim.fn[fn], method, params or vim.empty_dict())
  if not ok then
    -- The provider knows why the host did not start (no pynvim, wrong Python version...).
    local why = vim.fn.exists('*provider#python3#Error') == 1 and vim.fn['provider#python3#Error']() or ''
    return fail(
      ('the Python host (%s) failed%s: run `make install` in %s, then restart Neovim'):format(
        M.python(),
        why ~= '' and (' (' .. vim.split(why, '\n')[1] .. ')') or '',
        M.root
      )
    )
  end
  if not M.started then
    M.started = true
    watch()
  end
  M.problem = nil
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
