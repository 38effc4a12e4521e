--- `terminal.provider = 'external'`: the agent in a program of the user's choice (a new terminal
--- emulator window), from the template `terminal.external.cmd`. Neovim cannot show, hide or type
--- into it: it says so, and hands sent text over through the clipboard.
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')

local M = {}

--- The template with `{cmd}` replaced by the agent's command words.
---@param agent gemini_companion.Agent
---@param cmd string[]
---@return string[]?
local function command(agent, cmd)
  local template = (agent.spec.external or {}).cmd or config.options.terminal.external.cmd
  if type(template) == 'function' then
    return template(cmd)
  end
  if not template then
    return nil
  end
  local argv = {}
  for _, word in ipairs(template) do
    if word == '{cmd}' then
      vim.list_extend(argv, cmd)
    else
      table.insert(argv, word)
    end
  end
  return argv
end

---@param agent gemini_companion.Agent
---@param cmd string[]
---@param env table<string, string>
---@param on_exit fun(code: integer)
---@return boolean ok, string? error
function M.start(agent, cmd, env, on_exit)
  local argv = command(agent, cmd)
  if not argv or #argv == 0 then
    return false, "terminal.provider = 'external' needs terminal.external.cmd, e.g. { 'kitty', '{cmd}' }"
  end
  -- The program must stay in the foreground while the agent runs (`kitty`, `alacritty -e`,
  -- `wezterm start --always-new-process`): its exit is the agent's.
  local ok, job = pcall(vim.fn.jobstart, argv, {
    env = env,
    on_exit = function(_, code)
      on_exit(code)
    end,
  })
  if not ok or job <= 0 then
    return false, ('cannot run %s: %s'):format(argv[1], ok and job or tostring(job))
  end
  agent.job, agent.pid = job, vim.fn.jobpid(job)
  return true
end

---@param agent gemini_companion.Agent
function M.open(agent)
  message.notify(('%s runs in an external terminal (%s): switch to it there'):format(agent.name, agent.pid))
end

---@return boolean
function M.focused()
  return false
end

---@return boolean
function M.visible()
  return true
end

function M.hide() end

--- Neovim cannot type into another program's terminal: the text goes to the clipboard.
---@param agent gemini_companion.Agent
---@param text string
---@return boolean ok, string? error
function M.paste(agent, text)
  local copied = pcall(vim.fn.setreg, '+', text)
  return false,
    ('%s runs in an external terminal: Neovim cannot type into it; %s'):format(
      agent.name,
      copied and 'the text is in the clipboard ("+), paste it there' or 'and there is no clipboard to put it in'
    )
end

function M.enter() end

---@return nil no screen to watch: text is handed over at once
function M.screen()
  return nil
end

---@param agent gemini_companion.Agent
function M.stop(agent)
  vim.fn.jobstop(agent.job)
end

function M.exited() end

return M
