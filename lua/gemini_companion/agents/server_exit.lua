--- What the running agents go through when the server changes (`rewire`: their files point to the
--- new one) and when Neovim exits (`leave`: they stop, but those kept). Wired by agents/init.lua,
--- which this file requires when it runs (it requires this file).
local connection = require('gemini_companion.agents.connection')
local message = require('gemini_companion.message')

local M = {}

local left = false

--- Neovim exits: the agents stop, but those kept (agents/kept.lua: recorded while the server still
--- runs, so before it stops). Once.
function M.leave()
  if left then
    return
  end
  left = true
  local kept = require('gemini_companion.agents.kept')
  local running = require('gemini_companion.agents').running()
  local keep = vim.tbl_filter(kept.keeps, vim.tbl_values(running))
  local recorded = #keep > 0 and kept.record(keep)
  for _, agent in pairs(running) do
    if not (recorded and kept.keeps(agent)) then
      agent.provider.stop(agent)
    end
  end
end

--- A new server (`:GeminiCompanion restart`, or the host came back): each agent's files now
--- point to it. The CLIs do not reconnect on their own: say what to type.
function M.rewire()
  local status = require('gemini_companion.state').current
  if not status.running then
    return
  end
  local moved = {}
  for name, agent in pairs(require('gemini_companion.agents').running()) do
    if agent.port and agent.port ~= status.port then
      connection.register(agent)
      table.insert(moved, name)
    end
  end
  if #moved > 0 then
    table.sort(moved)
    message.notify(('new server: type /ide enable in %s to reconnect'):format(table.concat(moved, ', ')), 'warn')
  end
end

return M
