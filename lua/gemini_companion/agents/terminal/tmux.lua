--- `terminal.provider = 'tmux'`: an agent in a tmux pane beside Neovim's (Neovim inside tmux).
--- Hidden agents live on in a background tmux window (`break-pane`); text goes in through a
--- tmux paste buffer, byte for byte the bracketed paste a Neovim terminal gets.
local config = require('gemini_companion.config')

local M = {}

local POLL_MS = 1000 -- how often a pane's process is checked (kill(pid, 0): costs nothing)

---@param args string[]
---@param input? string
---@return string? stdout, string? error
local function tmux(args, input)
  local ok, result = pcall(function()
    return vim.system(vim.list_extend({ 'tmux' }, args), { text = true, stdin = input or false }):wait(5000)
  end)
  if not ok then
    return nil, tostring(result)
  end
  if result.code ~= 0 then
    return nil,
      vim.trim(result.stderr or '') ~= '' and vim.trim(result.stderr) or ('tmux exited with %d'):format(result.code)
  end
  return vim.trim(result.stdout or '')
end

---@param agent gemini_companion.Agent
---@return table
local function options(agent)
  return vim.tbl_extend('force', config.options.terminal.tmux, agent.spec.tmux or {})
end

local SPLIT = { right = { '-h' }, left = { '-h', '-b' }, bottom = { '-v' }, top = { '-v', '-b' } }

--- split-window / join-pane arguments that put a pane where the options say, beside Neovim's.
---@param agent gemini_companion.Agent
---@return string[]
local function placement(agent)
  local o = options(agent)
  return vim.list_extend(vim.deepcopy(SPLIT[o.position]), { '-l', tostring(o.size), '-t', vim.env.TMUX_PANE })
end

---@param agent gemini_companion.Agent
---@param cmd string[]
---@param env table<string, string> The whole connection environment (a tmux pane inherits tmux's, not Neovim's).
---@param on_exit fun(code: integer)
---@param focus boolean The new pane takes tmux's focus (false: Neovim's pane keeps it, -d).
---@return boolean ok, string? error
function M.start(agent, cmd, env, on_exit, focus)
  if not vim.env.TMUX or not vim.env.TMUX_PANE then
    return false, "terminal.provider = 'tmux' needs Neovim running inside tmux ($TMUX is not set)"
  end
  local args = { 'split-window', '-P', '-F', '#{pane_id} #{pane_pid}', '-c', vim.fn.getcwd() }
  if not focus then
    table.insert(args, '-d')
  end
  vim.list_extend(args, placement(agent))
  for key, value in pairs(env) do
    vim.list_extend(args, { '-e', key .. '=' .. value })
  end
  table.insert(args, '--')
  local out, err = tmux(vim.list_extend(args, cmd))
  local pane, pid = (out or ''):match('^(%%%d+) (%d+)$')
  if not pane then
    return false, err or ('tmux said %q'):format(out)
  end
  agent.pane, agent.pid, agent.hidden = pane, tonumber(pid), false
  M.watch(agent, on_exit)
  return true
end

--- Call `on_exit` once the agent's process is gone (also one an earlier Neovim left: kept.lua).
---@param agent gemini_companion.Agent
---@param on_exit fun(code: integer)
function M.watch(agent, on_exit)
  local timer = assert(vim.uv.new_timer())
  timer:start(POLL_MS, POLL_MS, function()
    if vim.uv.kill(agent.pid, 0) ~= 0 then
      timer:stop()
      timer:close()
      on_exit(-1) -- tmux reaped it: the code is not ours to know
    end
  end)
end

--- Bring the pane back beside Neovim (when hidden) and focus it.
---@param agent gemini_companion.Agent
function M.open(agent)
  if agent.hidden then
    local _, err = tmux(vim.list_extend({ 'join-pane', '-s', agent.pane }, placement(agent)))
    if err then
      return require('gemini_companion.message').notify(('%s: %s'):format(agent.name, err), 'error')
    end
    agent.hidden = false
  end
  tmux({ 'select-pane', '-t', agent.pane })
end

--- Neovim has the keyboard when this runs, so the pane is never the focused one.
---@return boolean
function M.focused()
  return false
end

---@param agent gemini_companion.Agent
---@return boolean
function M.visible(agent)
  return not agent.hidden
end

--- Move the pane to a background tmux window; the process keeps running.
---@param agent gemini_companion.Agent
function M.hide(agent)
  if not agent.hidden and tmux({ 'break-pane', '-d', '-s', agent.pane }) then
    agent.hidden = true
  end
end

--- The same bytes as a native paste: our own markers around the text, pasted as they are (-r: line
--- breaks stay LF, never Enter; no -p: bracketed whatever paste mode the CLI is in).
---@param agent gemini_companion.Agent
---@param text string
---@return boolean ok, string? error
function M.paste(agent, text)
  -- A name of this paste alone: two Neovims (or agents) on one tmux server never swap texts.
  local buffer = ('gemini-companion-%d-%s-%d'):format(vim.fn.getpid(), agent.name, vim.uv.hrtime())
  local _, err = tmux({ 'load-buffer', '-b', buffer, '-' }, require('gemini_companion.agents.prompt').bracketed(text))
  if not err then
    _, err = tmux({ 'paste-buffer', '-r', '-d', '-b', buffer, '-t', agent.pane }) -- -d: then drop the buffer
    if err then
      tmux({ 'delete-buffer', '-b', buffer })
    end
  end
  return err == nil, err
end

---@param agent gemini_companion.Agent
function M.enter(agent)
  tmux({ 'send-keys', '-t', agent.pane, 'Enter' })
end

---@param agent gemini_companion.Agent
---@return string
function M.screen(agent)
  return tmux({ 'capture-pane', '-p', '-t', agent.pane }) or ''
end

---@param agent gemini_companion.Agent
function M.stop(agent)
  tmux({ 'kill-pane', '-t', agent.pane })
end

function M.exited() end -- its pane closes with it

return M
