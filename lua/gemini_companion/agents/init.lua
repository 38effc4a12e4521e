--- Agents: Gemini CLI, Qwen Code (or any configured command), one process per name, shown and
--- hidden without stopping it: in a Neovim terminal, a tmux pane or an external terminal
--- (`terminal/*.lua`). Each starts with the server's environment, its own credentials
--- (connection.lua, access.py) and Qwen's IDE defaults (qwen_defaults.lua), so it comes up connected.
--- `:GeminiSend` and `:GeminiAdd` make their text in commands.lua.
local config = require('gemini_companion.config')
local connection = require('gemini_companion.agents.connection')
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')

local M = {}
local H = {}

---@class gemini_companion.Agent
---@field name string
---@field spec gemini_companion.AgentSpec
---@field provider gemini_companion.TerminalProvider
---@field pid integer
---@field buf integer? native: the terminal buffer.
---@field job integer? native, external: the job.
---@field pane string? tmux: the pane id.
---@field hidden boolean? tmux: moved to a background window.
---@field view table? native: the view of its window when last left (terminal/view.lua).
---@field exited boolean? The process ended.
---@field ready boolean? It has taken input once: no more waiting before a send.
---@field started number vim.uv.hrtime() at start.
---@field cli 'gemini'|'qwen'|nil Which CLI its command runs, when its package says so.
---@field version string The CLI's version from its package ('' when unknown).
---@field gemini_pid integer? Its own Gemini discovery file's number (access.py).
---@field qwen_port integer? Its own Qwen lock file's number.
---@field port integer? The server its files point to.
---@field state gemini_companion.AgentState? What it is doing (attention.lua).
---@field state_detail string? What it waits for, or why its turn failed.
---@field heard boolean? A hook of it has been heard: its state comes from hooks (else its screen).
---@field conversation string? The CLI's session id, when known (its `--resume <id>`, its SessionStart).

---@class gemini_companion.TerminalProvider
---@field start fun(agent: gemini_companion.Agent, cmd: string[], env: table<string, string>, on_exit: fun(code: integer), focus: boolean): boolean, string? Shown (and focused when `focus`, where it can be); `on_exit` may be called from any context.
---@field open fun(agent: gemini_companion.Agent) Show and focus.
---@field hide fun(agent: gemini_companion.Agent)
---@field focused fun(agent: gemini_companion.Agent): boolean
---@field visible fun(agent: gemini_companion.Agent): boolean
---@field paste fun(agent: gemini_companion.Agent, text: string): boolean, string? A bracketed paste.
---@field enter fun(agent: gemini_companion.Agent)
---@field screen fun(agent: gemini_companion.Agent): string? What it shows (nil: nothing to watch).
---@field stop fun(agent: gemini_companion.Agent)
---@field exited fun(agent: gemini_companion.Agent) Its process ended.

---@type table<string, gemini_companion.Agent>
local running = {}

--- The agent last opened, focused or sent to.
---@type string?
M.last = nil

local group = vim.api.nvim_create_augroup('gemini_companion_agents', { clear = true })

---@param pattern string
---@param data table
local function event(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

---@param name string
---@return gemini_companion.AgentSpec?
local function spec(name)
  return require('gemini_companion.agents.instances').spec(name) -- `gemini@2`: gemini's
end

---@param agent gemini_companion.Agent
---@param code integer
local function on_exit(agent, code)
  agent.exited = true
  if running[agent.name] ~= agent then
    return
  end
  running[agent.name] = nil
  require('gemini_companion.agents.send_queue').drop(agent)
  require('gemini_companion.agents.attention').exited(agent)
  if agent.port then
    host.notify('agent_unregister', { name = agent.name })
  end
  event('GeminiAgentExited', { agent = agent.name, code = code })
  agent.provider.exited(agent)
end

--- The agent's command line, or why it cannot start.
---@param name string
---@param args string[]
---@return string[]? cmd, string? error
local function command(name, args)
  local agent_spec = spec(name)
  if not agent_spec then
    return nil, ('no agent %q (agents: %s)'):format(name, table.concat(M.names(), ', '))
  end
  local cmd = vim.list_extend(vim.deepcopy(agent_spec.cmd), args)
  if vim.fn.executable(cmd[1]) == 0 then
    return nil, ('%s: %s is not on PATH'):format(name, cmd[1])
  end
  return cmd
end

--- Start an agent, shown (and focused, when `focus()`, where its provider can), once its CLI's
--- settings are as they will be (cli_settings/ask.lua: an edit runs off the main loop first);
--- `done(agent)` or `done(nil, error)`.
---@param name string
---@param args string[]
---@param focus fun(): boolean
---@param done fun(agent: gemini_companion.Agent?, error: string?)
local function start(name, args, focus, done)
  local cmd, problem = command(name, args)
  if not cmd then
    return done(nil, problem)
  end
  local agent_spec = spec(name) --[[@as gemini_companion.AgentSpec]]
  local entry = require('gemini_companion.agents.instances').entry(name) --[[@as string]]
  local cli = require('gemini_companion.agents.cli_settings').cli_of(entry, cmd)
  require('gemini_companion.agents.cli_settings.ask').before_start(
    cli,
    config.options.cli_settings,
    agent_spec.env,
    function()
      done(H.spawn(name, cmd, agent_spec, focus()))
    end
  )
end

--- Start the agent's process, shown (and focused, when `focus`).
---@param name string
---@param cmd string[]
---@param agent_spec gemini_companion.AgentSpec
---@param focus boolean
---@return gemini_companion.Agent? agent, string? error
function H.spawn(name, cmd, agent_spec, focus)
  local provider = agent_spec.provider or config.options.terminal.provider
  local agent = {
    name = name,
    spec = agent_spec,
    provider = require('gemini_companion.agents.terminal.' .. provider),
    started = vim.uv.hrtime(),
  }
  agent.cli, agent.version = require('gemini_companion.agents.cli_package').of(cmd)
  agent.conversation = require('gemini_companion.agents.instances').conversation(cmd)
  local own = connection.register(agent) -- first: it brings the server's latest environment
  local env = vim.tbl_extend('force', connection.env(), own, agent_spec.env or {})
  if next(env) == nil then -- no server, no env of its own: an empty {} would reach jobstart as a List (E475)
    env = vim.empty_dict()
  end
  local ok, err = agent.provider.start(
    agent,
    cmd,
    env,
    vim.schedule_wrap(function(code)
      on_exit(agent, code)
    end),
    focus
  )
  if not ok then
    if agent.port then
      host.notify('agent_unregister', { name = name })
    end
    return nil, ('%s: cannot start %s: %s'):format(name, cmd[1], err)
  end
  running[name] = agent
  require('gemini_companion.agents.attention').started(agent)
  event('GeminiAgentStarted', { agent = name, pid = agent.pid })
  return agent
end

--- The agent a command means: the one named, else the last one used, else the default.
---@param name? string
---@return string
function M.resolve(name)
  return (name and name ~= '') and name or M.last or config.options.default_agent
end
local resolve = M.resolve

--- Each agent being started once the server answers (served.lua): what waits for it, and
--- whether one of those asked for its focus.
---@type table<string, {focus: boolean, [integer]: fun(agent: gemini_companion.Agent)}>
local starting = {}

--- Start the agent once the server answers (at once when it does), then `done(agent)`. One
--- start per name: a second ask while it waits joins the first (focused if either asked).
---@param name string
---@param args string[]
---@param done fun(agent: gemini_companion.Agent)
---@param focus boolean
local function start_served(name, args, done, focus)
  if starting[name] then
    starting[name].focus = starting[name].focus or focus
    return table.insert(starting[name], done)
  end
  local _, problem = command(name, args)
  if problem then
    return message.notify(problem, 'error')
  end
  local waited = { done, focus = focus }
  starting[name] = waited
  require('gemini_companion.agents.served').when(function(not_served)
    if not_served then -- never an agent that cannot connect, and never silently: one line
      starting[name] = nil
      return message.brief(('%s not started: %s'):format(name, not_served), 'error')
    end
    start(name, args, function()
      return waited.focus
    end, function(agent, err)
      starting[name] = nil -- (asks while its settings were written joined this start)
      if not agent then
        return message.notify(err or '?', 'error')
      end
      M.last = name
      for _, fn in ipairs(waited) do
        fn(agent)
      end
    end)
  end)
end

--- Show and focus the agent (starting it with `args` if it does not run); `on_open(agent)` once
--- it is open. Returns the agent when it is open at once (a start may wait for the server).
---@param name? string
---@param args? string[]
---@param on_open? fun(agent: gemini_companion.Agent)
---@return gemini_companion.Agent?
function M.open(name, args, on_open)
  name = resolve(name)
  on_open = on_open or function() end
  local agent = running[name]
  if not agent then
    start_served(name, args or {}, on_open, true)
    return running[name]
  end
  agent.provider.open(agent)
  M.last = name
  on_open(agent)
  return agent
end

--- Hide the agent's windows in this tab (a tmux pane: to a background window); it keeps running.
---@param name? string
function M.hide(name)
  local agent = running[resolve(name)]
  if agent then
    agent.provider.hide(agent)
  end
end

--- Hidden → shown and focused; shown but not focused → focused; focused → hidden. `new` as the
--- first argument: another session of the agent (instances.lua); the entry's name (or none) with
--- several of its sessions running and none focused: the user picks one.
---@param name? string
---@param args? string[]
function M.toggle(name, args)
  if args and args[1] == 'new' then
    return M.new(name, vim.list_slice(args, 2))
  end
  local instances = require('gemini_companion.agents.instances')
  local entry = instances.entry(resolve(name))
  local of_entry = entry and (not name or name == '' or name == entry) -- (not one session named)
  local sessions = of_entry and instances.running(entry) or {}
  if #sessions > 1 and not (args and #args > 0) then
    for _, session in ipairs(sessions) do
      if running[session].provider.focused(running[session]) then
        return M.hide(session)
      end
    end
    return instances.pick(entry --[[@as string]], sessions, M.open, function()
      M.new(entry)
    end)
  end
  -- The one running, else the entry itself (not a session that was used last and has ended).
  name = of_entry and (#sessions == 1 and sessions[1] or entry) or resolve(name)
  local agent = running[name]
  if agent and agent.provider.focused(agent) then
    M.hide(name)
  elseif agent or (args and #args > 0) or not require('gemini_companion.agents.sessions').consult(name) then
    M.open(name, args) -- (consult: the first start in this Neovim may resume, as `resume` says)
  end
end

--- Start another session of the agent entry `name` means (the entry itself when it does not run,
--- else `entry@2`, `entry@3`, …), shown and focused.
---@param name? string
---@param args? string[]
function M.new(name, args)
  local instances = require('gemini_companion.agents.instances')
  local entry = instances.entry(resolve(name))
  if not entry then
    return message.notify(select(2, command(resolve(name), {})) or '?', 'error')
  end
  M.open(
    instances.next(entry, function(taken)
      return running[taken] ~= nil or starting[taken] ~= nil
    end),
    args or {}
  )
end

--- Focus without toggling.
---@param name? string
function M.focus(name)
  M.open(name)
end

--- Stop one agent (or all): the process ends, its window closes.
---@param name? string
function M.stop(name)
  for agent_name, agent in pairs(running) do
    if not name or agent_name == name then
      agent.provider.stop(agent)
    end
  end
end

--- Running agents, for statuslines and scripts.
---@return {name: string, pid: integer, visible: boolean, state: gemini_companion.AgentState}[]
function M.list()
  local list = {}
  for name, agent in pairs(running) do
    local visible = agent.provider.visible(agent)
    table.insert(list, { name = name, pid = agent.pid, visible = visible, state = agent.state or 'starting' })
  end
  table.sort(list, function(a, b)
    return a.name < b.name
  end)
  return list
end

--- Configured agent names (completion).
---@return string[]
function M.names()
  local names = vim.tbl_keys(config.options.agents)
  table.sort(names)
  return names
end

---@param name string
---@return gemini_companion.Agent?
function M.get(name)
  return running[name]
end

--- The running agents by name (a copy), for agents/server_exit.lua.
---@return table<string, gemini_companion.Agent>
function M.running()
  return vim.tbl_extend('force', {}, running)
end

--- Run `fn(agent)` with the agent running: focused (shown) when `focus_after_send`, else as it is,
--- or started without the focus (the delivery of a send: agents/deliver.lua).
---@param name string
---@param fn fun(agent: gemini_companion.Agent)
function M.reach(name, fn)
  local agent = running[name]
  if config.options.focus_after_send then
    M.open(name, nil, fn)
  elseif agent then
    fn(agent)
  else
    start_served(name, {}, fn, false)
  end
end

-- Sends (`send`, `send_later`, `ask`): agents/deliver.lua.
local deliver = require('gemini_companion.agents.deliver')
M.send = deliver.send
M.send_later = deliver.send_later
M.ask = deliver.ask

-- When the server changes and when Neovim exits: agents/server_exit.lua.
local server_exit = require('gemini_companion.agents.server_exit')
M.leave = server_exit.leave
vim.api.nvim_create_autocmd('User', { group = group, pattern = 'GeminiStatusChanged', callback = server_exit.rewire })

--- Take back an agent an earlier Neovim left running in its tmux pane (agents/kept.lua: already
--- checked to be there): its files written again under the numbers it reads, its pane watched.
---@param kept table
---@return gemini_companion.Agent? agent, string? why
function M.adopt(kept)
  local agent_spec = spec(kept.name)
  if not agent_spec or running[kept.name] then
    return nil, agent_spec and 'one of that name runs already' or 'no such agent in this setup'
  end
  ---@type gemini_companion.Agent
  local agent = {
    name = kept.name,
    spec = agent_spec,
    provider = require('gemini_companion.agents.terminal.tmux'),
    started = vim.uv.hrtime(),
    pane = kept.pane,
    pid = kept.pid,
    hidden = kept.hidden == true, -- (not `ready`: a send waits for its screen to settle, /ide enable typed)
    cli = (kept.cli == 'gemini' or kept.cli == 'qwen') and kept.cli or nil,
    version = type(kept.version) == 'string' and kept.version:match('^[%w.+-]+$') and kept.version:sub(1, 40) or '',
    gemini_pid = type(kept.gemini_pid) == 'number' and kept.gemini_pid or nil, -- (the host checks them)
    qwen_port = type(kept.qwen_port) == 'number' and kept.qwen_port or nil,
  }
  connection.register(agent)
  require('gemini_companion.agents.terminal.tmux').watch(
    agent,
    vim.schedule_wrap(function(code)
      on_exit(agent, code)
    end)
  )
  running[kept.name] = agent
  require('gemini_companion.agents.attention').started(agent)
  event('GeminiAgentStarted', { agent = kept.name, pid = agent.pid })
  return agent
end

vim.api.nvim_create_autocmd('VimLeavePre', { group = group, callback = M.leave })

return M
