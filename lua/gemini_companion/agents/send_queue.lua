--- Sends to one agent, one at a time and in order: a paste never lands between another send's
--- paste and its Enter (which would submit both as one prompt, then an empty one). A send that
--- raises ends its turn with one line naming the reason: the sends after it still go; those of an
--- agent that exited are dropped, with one line.
local message = require('gemini_companion.message')

local M = {}
local H = {}

---@alias gemini_companion.SendJob fun(done: fun(), guard: fun(fn: function): function)

---@type table<gemini_companion.Agent, gemini_companion.SendJob[]>
local queues = setmetatable({}, { __mode = 'k' })

--- Run `job(done, guard)` for `agent` once the jobs before it have ended their turn. `done()` ends
--- it (once: a later call does nothing); `guard(fn)` is `fn` made to end the turn when it raises,
--- for the callbacks the job runs later. A raise in `job` itself ends the turn too.
---@param agent gemini_companion.Agent
---@param job gemini_companion.SendJob
function M.run(agent, job)
  if queues[agent] then
    return table.insert(queues[agent], job)
  end
  queues[agent] = {}
  H.start(agent, job)
end

--- The agent's process ended: the send under way and those waiting will not go (a CLI that is
--- gone reads nothing); one line says how many.
---@param agent gemini_companion.Agent
function M.drop(agent)
  local waiting = queues[agent]
  if waiting then
    queues[agent] = nil
    message.notify(('%s exited: %d send(s) did not go'):format(agent.name, #waiting + 1), 'warn')
  end
end

---@param agent gemini_companion.Agent
---@param job gemini_companion.SendJob
function H.start(agent, job)
  local ended = false
  local function done()
    if ended then
      return
    end
    ended = true
    local following = queues[agent] and table.remove(queues[agent], 1)
    if following then
      return H.start(agent, following)
    end
    queues[agent] = nil
  end
  local function guard(fn)
    return function(...)
      local ok, err = pcall(fn, ...)
      if not ok then
        local reason = vim.split(tostring(err), '\n', { plain = true })[1]
        message.notify(('%s: a send did not go: %s'):format(agent.name, reason), 'error')
        done()
      end
    end
  end
  guard(job)(done, guard)
end

return M
