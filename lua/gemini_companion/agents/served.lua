--- An agent starts connected only if its environment names the server and its own token, and
--- both exist only once the server answers. A plugin loaded on first use (lazy.nvim's `cmd`,
--- `keys`, `event`, `ft`) starts its server in that same moment, so the first agent is asked for
--- before the server is up: `when` holds it until the server's first snapshot, never blocking.
local M = {}

--- How long an agent waits for a server that is starting (a Python process on a loaded machine).
M.timeout_ms = 30000

local waiting = {} ---@type fun(err?: string)[]
local told ---@type string? why the server failed, to be said by the waiting agents' line
local timer ---@type uv.uv_timer_t?
local autocmd ---@type integer?

---@return boolean
local function up()
  local status = require('gemini_companion.state').current
  return status.running or status.state == 'starting'
end

---@param err? string
local function settle(err)
  if timer then
    timer:stop()
    timer:close()
    timer = nil
  end
  if autocmd then
    pcall(vim.api.nvim_del_autocmd, autocmd)
    autocmd = nil
  end
  local done = waiting
  waiting = {}
  for _, fn in ipairs(done) do
    fn(err)
  end
end

--- Whether the line saying `why` the server failed is the waiting agents' (once): the host's own
--- line for it is left out, so the user reads one line, not a hit-enter prompt.
---@param why string
---@return boolean
function M.tells(why)
  if told ~= nil and told == why then
    told = nil
    return true
  end
  return false
end

--- Run `fn()` once the server answers: at once when it does, or when no server is on its way
--- (stopped, `auto_start = false`, or it failed before: the agent starts as asked). A server not
--- started yet is started now. `fn(err)`: it failed or did not answer in time.
---@param fn fun(err?: string)
function M.when(fn)
  local host = require('gemini_companion.host')
  if not host.started then
    require('gemini_companion').autostart() -- its deferred start may not have run yet
  end
  if up() or not host.channel or not require('gemini_companion.state').start_asked then
    return fn()
  end
  table.insert(waiting, fn)
  if #waiting > 1 then
    return
  end
  autocmd = vim.api.nvim_create_autocmd('User', {
    pattern = 'GeminiStatusChanged',
    once = true, -- a new host's first snapshot says starting, running or failed
    callback = function()
      local status = require('gemini_companion.state').current
      local err = not up() and (status.error or ('the server is ' .. status.state)) or nil
      told = err
      -- Scheduled: this runs inside the host's own call, and starting an agent calls the host.
      vim.schedule(function()
        settle(err)
      end)
    end,
  })
  timer = vim.defer_fn(function()
    timer = nil
    settle(('the server did not answer within %d s'):format(M.timeout_ms / 1000))
  end, M.timeout_ms)
end

return M
