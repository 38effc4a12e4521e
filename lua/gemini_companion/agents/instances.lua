--- Several sessions of one agent entry (`:Gemini gemini new`): each instance is an agent of its
--- own name, `gemini@2`, run from the entry's config. The name is all the rest keys on, so each
--- has its own token and discovery files (access.py), state, statusline entry, reviews (labelled
--- by it) and turns. `@`: a command line expands neither it nor the number after it (`gemini#2`
--- would be buffer 2 in `:GeminiAdd`), and it is plain in file names, env values and statuslines.
--- Also the questions that come with several: which one `:Gemini` means, and where a resumed
--- conversation goes while one runs (beside it, or in its place: only after that answer).
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')

local M = {}
local H = {}

M.SEPARATOR = '@'
M.STOP_WAIT_MS = 15000 -- "in its place": the old one's exit waited for this long, then said

--- The config entry an agent name runs: itself, or `entry@N` (N ≥ 2, no leading zero) of one.
---@param name any
---@return string?
function M.entry(name)
  if type(name) ~= 'string' then
    return nil
  end
  local agents = config.options.agents
  if agents[name] then
    return name
  end
  local base, number = name:match('^(.+)@([1-9]%d*)$')
  if base and agents[base] and tonumber(number) >= 2 then
    return base
  end
  return nil
end

--- The config an agent name runs (its entry's).
---@param name any
---@return gemini_companion.AgentSpec?
function M.spec(name)
  local entry = M.entry(name)
  return entry and config.options.agents[entry]
end

--- The running instances of `entry`: the entry first, then by number.
---@param entry string
---@return string[]
function M.running(entry)
  local names = {}
  for _, item in ipairs(require('gemini_companion.agents').list()) do
    if M.entry(item.name) == entry then
      table.insert(names, item.name)
    end
  end
  table.sort(names, function(a, b)
    return H.number(a) < H.number(b)
  end)
  return names
end

--- Completion: the configured agents, then the running sessions of theirs (`gemini@2`).
---@return string[]
function M.names()
  local agents = require('gemini_companion.agents')
  local names = agents.names()
  for _, item in ipairs(agents.list()) do
    if not config.options.agents[item.name] then
      table.insert(names, item.name)
    end
  end
  return names
end

--- The conversation a command line resumes by id (`--resume <id>`), if any.
---@param cmd string[]
---@return string?
function M.conversation(cmd)
  for i, word in ipairs(cmd) do
    if (word == '--resume' or word == '-r') and cmd[i + 1] and cmd[i + 1] ~= 'latest' then
      return cmd[i + 1]
    end
  end
  return nil
end

--- The first name of `entry` that is free: the entry itself, else `entry@2`, `entry@3`, …
---@param entry string
---@param taken fun(name: string): boolean
---@return string
function M.next(entry, taken)
  local name, number = entry, 1
  while taken(name) or (number > 1 and config.options.agents[name]) do
    number = number + 1
    name = entry .. M.SEPARATOR .. number
  end
  return name
end

--- `:Gemini` with several instances of `entry` running: pick one (or a new one); Esc: nothing.
---@param entry string
---@param names string[]
---@param open fun(name: string)
---@param new fun()
function M.pick(entry, names, open, new)
  local agents = require('gemini_companion.agents')
  local items = vim.list_extend(vim.deepcopy(names), { '' }) -- '': a new session
  vim.ui.select(items, {
    prompt = ('%s: which session?'):format(entry),
    format_item = function(name)
      if name == '' then
        return ('new %s session'):format(entry)
      end
      local agent = agents.get(name)
      return ('%s · %s'):format(name, agent and agent.state or 'exited')
    end,
  }, function(choice)
    if choice == '' then
      new()
    elseif choice then
      open(choice)
    end
  end)
end

--- A conversation to resume (`args`) while `target`, an instance of its entry, runs: ask whether
--- it starts beside it (a new instance) or in its place (`target` stopped first); cancel or Esc
--- changes nothing. Nobody to ask (no UI): only say so.
---@param target string
---@param args string[]
function M.resume_beside(target, args)
  local agents = require('gemini_companion.agents')
  local entry = M.entry(target) --[[@as string]]
  if #vim.api.nvim_list_uis() == 0 then
    return message.notify(
      ('%s is running: /quit it first to resume another conversation (:Gemini %s new starts one beside it)'):format(
        target,
        entry
      ),
      'warn'
    )
  end
  local choices = {
    ('Beside it: a new %s session'):format(entry),
    ('In its place: stop %s, then resume'):format(target),
    'Cancel',
  }
  vim.ui.select(
    choices,
    { prompt = ('%s is running: resume beside it or in its place?'):format(target) },
    function(_, i)
      if i == 1 then
        agents.new(entry, args)
      elseif i == 2 then
        H.replace(target, args)
      end
    end
  )
end

--- Stop `name`, and once it has exited start it again with `args` (bounded: said when it does not end).
---@param name string
---@param args string[]
function H.replace(name, args)
  local agents = require('gemini_companion.agents')
  local agent = agents.get(name)
  if not agent then
    return agents.open(name, args)
  end
  local group = vim.api.nvim_create_augroup('gemini_companion_replace_' .. name, { clear = true })
  local timer = assert(vim.uv.new_timer())
  local function finish()
    pcall(vim.api.nvim_del_augroup_by_id, group)
    if not timer:is_closing() then
      timer:close()
    end
  end
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = 'GeminiAgentExited',
    callback = function(ev)
      if type(ev.data) == 'table' and ev.data.agent == name then
        finish()
        vim.schedule(function() -- after the exit's other listeners (its files taken back)
          agents.open(name, args)
        end)
      end
    end,
  })
  timer:start(
    M.STOP_WAIT_MS,
    0,
    vim.schedule_wrap(function()
      if not timer:is_closing() then
        finish()
        message.notify(('%s did not stop: nothing resumed'):format(name), 'warn')
      end
    end)
  )
  agents.stop(name)
end

---@param name string
---@return integer
function H.number(name)
  return tonumber(name:match('@(%d+)$')) or 1
end

return M
