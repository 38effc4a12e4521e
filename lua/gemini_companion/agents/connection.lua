--- What connects an agent to the server: its own discovery files and token, registered with the
--- host before it starts (so the server knows which agent connects, and again after a restart),
--- and the server's environment that a terminal outside Neovim must be given.
local host = require('gemini_companion.host')

local M = {}

--- The agent's own discovery files and tokens (so the server knows which agent connects),
--- and the environment that names them; {} while no server runs.
---@param agent gemini_companion.Agent
---@return table<string, string>
function M.register(agent)
  local status = require('gemini_companion.state').current
  if not (status.running or status.state == 'starting') then
    return {}
  end
  local got = host.request('agent_register', {
    name = agent.name,
    cli = agent.cli,
    version = agent.version,
    gemini_pid = agent.gemini_pid,
    qwen_port = agent.qwen_port,
  })
  if type(got) ~= 'table' or type(got.env) ~= 'table' then
    return {}
  end
  require('gemini_companion.state').update(got.snapshot) -- the env and Qwen defaults it names
  agent.gemini_pid, agent.qwen_port, agent.port = got.gemini_pid, got.qwen_port, status.port
  return got.env
end

--- The environment a terminal outside Neovim must be given: the server's (what Neovim's own
--- terminals inherit) and the Qwen defaults file.
---@return table<string, string>
function M.env()
  local env = {}
  for key, value in pairs(require('gemini_companion.state').env) do
    if value then
      env[key] = value
    end
  end
  local defaults = require('gemini_companion.env').qwen_system_defaults
  env[defaults] = vim.env[defaults]
  return env
end

return M
