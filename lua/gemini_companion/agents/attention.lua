--- What each managed agent is doing (starting, idle, working, waiting, exited), told by the CLI's
--- own hooks (changes.py forwards them: `attention.event`) or, where no hook runs, by what its
--- terminal shows (attention/screen.lua reads it); one `vim.notify` line when a hidden agent starts
--- waiting or ends a turn. The statusline string that shows it is agents/statusline.lua's.
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')
local screen = require('gemini_companion.agents.attention.screen')
require('gemini_companion.agents.statusline') -- loaded with the states it shows: it counts every event

local M = {}

---@alias gemini_companion.AgentState 'starting'|'idle'|'working'|'waiting'|'exited'

---@class gemini_companion.Agent
---@field waiting_since integer? vim.uv.hrtime() it started waiting.
---@field dialog_seen boolean? Its dialog has been on screen since.
---@field screen_state gemini_companion.AgentState? What its screen said at the last poll(s).
---@field screen_count integer? For how many polls in a row.
---@field screen_since integer? vim.uv.hrtime() the screen first said it.
---@field answered boolean? Gemini with hooks: its dialog went, no hook since (a rejection fires none).
---@field turn_files integer? The files its turn changed (User GeminiTurnEnded), once known.
---@field finish {failed: string?}? Its turn's end, to be said once the file count is known.
---@field reading boolean? A tmux screen read is under way.

local POLL_MS = 250 -- a screen read per agent that needs one (none: the timer stops)
local STEADY_POLLS = 2 -- a screen's state counts once seen this many polls in a row
-- An idle screen after a turn counts only once it has held this long: between a dialog and the
-- next spinner (and between rounds) a CLI can show its bare input box for a moment.
local IDLE_STEADY_MS = 2000
local DIALOG_GRACE_MS = 30000 -- Gemini draws the dialog after the hook: until seen (or this long), keep waiting
local FINISH_WAIT_MS = 5000 -- a turn's end waits this long for its file count (changes.py's snapshot)
local SCREEN_LINES = 120 -- the bottom of the screen (attention/screen.lua reads where the CLI draws)

local focused = true -- Neovim has the focus (FocusLost / FocusGained)
local timer = nil ---@type uv.uv_timer_t?

---@return table
local function agents()
  return require('gemini_companion.agents')
end

local clean = screen.text -- what a CLI names, as one bounded line

--- Is the user looking at the agent: its window in the current tab, and Neovim focused?
---@param agent gemini_companion.Agent
---@return boolean
local function seen(agent)
  if not focused then
    return false
  end
  if agent.buf then -- in this tab (the provider's `visible` counts any tab)
    return #require('gemini_companion.agents.terminal.native').windows(agent) > 0
  end
  local ok, visible = pcall(agent.provider.visible, agent)
  return ok and visible == true
end

---@param agent gemini_companion.Agent
---@param text string
---@param level 'info'|'warn'
local function tell(agent, text, level)
  if seen(agent) then
    return
  end
  agents().last = agent.name -- :Gemini goes to the agent that asked
  message.notify(clean(agent.name, 60) .. ' ' .. text, level)
end

-- --- states -------------------------------------------------------------------------------

local ensure_poll -- defined below

---@param agent gemini_companion.Agent
---@param state gemini_companion.AgentState
---@param detail? string
function M.set(agent, state, detail)
  if agent.state == state and agent.state_detail == detail then
    return
  end
  if state == 'waiting' and agent.state ~= 'waiting' then
    agent.waiting_since, agent.dialog_seen = vim.uv.hrtime(), false
  end
  if state ~= 'working' then
    agent.answered = nil
  end
  agent.state, agent.state_detail, agent.screen_state, agent.screen_count = state, detail, nil, 0
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiAgentState',
    modeline = false,
    data = { agent = agent.name, state = state, detail = detail },
  })
  ensure_poll()
end

--- A turn starts: its file count and pending "finished" line belong to the last one.
---@param agent gemini_companion.Agent
local function turn_start(agent)
  if agent.state ~= 'working' and agent.state ~= 'waiting' then
    agent.turn_files, agent.finish = nil, nil
  end
  M.set(agent, 'working')
end

---@param agent gemini_companion.Agent
---@param what string what it waits for ("asks to run: `ls`")
local function waiting(agent, what)
  local was = agent.state
  M.set(agent, 'waiting', what)
  if was ~= 'waiting' and config.options.notify.waiting then
    tell(agent, what, 'warn')
  end
end

---@param agent gemini_companion.Agent
local function say_finished(agent)
  local finish = agent.finish
  agent.finish = nil
  if not finish then
    return
  end
  if finish.failed then
    return tell(agent, 'failed: ' .. clean(finish.failed), 'warn')
  end
  local files = agent.turn_files
  if files == nil then
    return tell(agent, 'finished', 'info')
  elseif files == 0 then
    return tell(agent, 'finished: no file changed', 'info')
  end
  tell(agent, ('finished: %d file%s changed — :GeminiChanges'):format(files, files == 1 and '' or 's'), 'info')
end

--- The turn ended (`failed`: why). Its file count comes with `User GeminiTurnEnded`, before or
--- after this: said at once when known, else when it comes (or without it, after a while).
---@param agent gemini_companion.Agent
---@param failed? string
---@param counted boolean a turn's file count is coming (hooks); false: the screen told it
local function finished(agent, failed, counted)
  local was = agent.state
  M.set(agent, 'idle', failed and clean(failed) or nil)
  if not config.options.notify.finished or (was ~= 'working' and was ~= 'waiting') then
    return
  end
  local finish = { failed = failed }
  agent.finish = finish
  if failed or not counted or agent.turn_files ~= nil then
    return say_finished(agent)
  end
  vim.defer_fn(function()
    if agent.finish == finish then
      say_finished(agent)
    end
  end, FINISH_WAIT_MS)
end

--- What a CLI's hook event asks for, in words ("asks to run: `npm install`").
---@param ev table
---@return string
local function asks(ev)
  local details = type(ev.details) == 'table' and ev.details or {}
  local input = type(ev.tool_input) == 'table' and ev.tool_input or {}
  local command = details.command or input.command
  if details.type == 'exec' or command then
    return ('asks to run: `%s`'):format(clean(command))
  end
  local file = details.fileName or input.file_path or input.path
  if details.type == 'edit' or file then
    file = tostring(file or '?')
    return 'asks to edit: ' .. clean(file:find('%z') and file or vim.fn.fnamemodify(file, ':~:.'))
  end
  if input.question then
    return 'asks: ' .. clean(input.question)
  end
  if details.type == 'ask_user' then
    return 'asks a question'
  end
  local title = details.title or ev.tool_name
  return title and ('asks: ' .. clean(title)) or 'asks for permission'
end

--- A hook event of a managed agent (changes.py → Lua): {agent, hook_event_name, ...the CLI's
--- kept fields (hook.py)}.
---@param ev table
function M.event(ev)
  local agent = type(ev) == 'table' and type(ev.agent) == 'string' and agents().get(ev.agent)
  if not agent or agent.exited then
    return
  end
  agent.heard, agent.answered = true, nil
  local name, kind = ev.hook_event_name, ev.notification_type
  if name == 'SessionStart' then
    M.set(agent, 'idle')
    agent.conversation = type(ev.session_id) == 'string' and ev.session_id or agent.conversation
    if ev.source == 'resume' then -- Gemini 0.61's resume bug: its orphan goes before it does harm
      require('gemini_companion.agents.sessions').orphan(agent, ev.transcript_path)
    end
  elseif name == 'BeforeAgent' or name == 'UserPromptSubmit' then
    turn_start(agent)
  elseif name == 'AfterTool' or name == 'PreToolUse' or name == 'PostToolUse' then
    M.set(agent, 'working')
  elseif name == 'PermissionRequest' or (name == 'Notification' and kind == 'ToolPermission') then
    local ok, what = pcall(asks, ev) -- whatever the payload holds, the agent is waiting
    waiting(agent, ok and what or 'asks for permission')
  elseif name == 'Notification' and kind == 'permission_prompt' then
    if agent.state ~= 'waiting' then -- PermissionRequest, just before, said what
      waiting(agent, 'asks for permission')
    end
  elseif name == 'Notification' and kind == 'idle_prompt' then
    M.set(agent, 'idle') -- after every end, cancelled or rejected too: no line of its own
  elseif name == 'AfterAgent' or name == 'Stop' then
    finished(agent, nil, true)
  elseif name == 'StopFailure' then
    finished(agent, tostring(ev.error_details or ev.error or 'error'), true)
  end
end

-- --- the screen ---------------------------------------------------------------------------

--- What the bottom of a CLI's screen says (attention/screen.lua).
M.classify = screen.classify

--- Does the agent need its screen read: no hook of it heard yet, or Gemini waiting or just
--- answered (neither an approval nor a rejection fires a hook in Gemini CLI 0.61.0)?
---@param agent gemini_companion.Agent
---@return boolean
local function watched(agent)
  return not agent.exited
    and (not agent.heard or (agent.cli == 'gemini' and (agent.state == 'waiting' or agent.answered == true)))
    and (agent.buf ~= nil or agent.pane ~= nil)
end

---@param agent gemini_companion.Agent
---@return 'hooks'|'screen'|'none' where its state comes from
function M.source(agent)
  if agent.heard then
    return 'hooks'
  end
  return (agent.buf or agent.pane) and 'screen' or 'none'
end

--- The screen's state, once it holds: STEADY_POLLS reads in a row, and an idle screen after a
--- turn IDLE_STEADY_MS too. A dialog that goes is answered: the agent works on (an approval) or
--- its idle screen holds (a rejection). So a moment of bare input box after a dialog, or between
--- rounds, is never a turn's end, and the hooks' agent ends its turns by its hooks only.
---@param agent gemini_companion.Agent
---@param lines string[]
local function from_screen(agent, lines)
  if not watched(agent) then
    return
  end
  local state, what, prompt = M.classify(lines)
  if agent.state == 'starting' and not (prompt or state == 'waiting') then
    return -- until the CLI has drawn its prompt (or asks something)
  end
  if state == 'waiting' then
    agent.dialog_seen = true
  elseif state and agent.state == 'waiting' then
    local grace = (vim.uv.hrtime() - (agent.waiting_since or 0)) / 1e6 > DIALOG_GRACE_MS
    if agent.heard and not (agent.dialog_seen or grace) then
      return -- Gemini draws its dialog after the hook: not answered before it was drawn
    end
    state = 'working'
  end
  if not state or state == agent.state then
    agent.screen_state, agent.screen_count = nil, 0
    return
  end
  local now = vim.uv.hrtime()
  if agent.screen_state ~= state then
    agent.screen_state, agent.screen_count, agent.screen_since = state, 1, now
    return
  end
  agent.screen_count = agent.screen_count + 1
  if agent.screen_count < STEADY_POLLS then
    return
  end
  local after_turn = agent.state == 'working' or agent.state == 'waiting'
  if state == 'idle' and after_turn and (now - agent.screen_since) / 1e6 < IDLE_STEADY_MS then
    return
  end
  if state == 'waiting' then
    waiting(agent, what or 'asks for confirmation')
  elseif state == 'working' then
    agent.answered = agent.heard and agent.state == 'waiting' or agent.answered -- read on until a hook
    M.set(agent, 'working')
  elseif after_turn and not agent.heard then
    finished(agent, nil, false)
  else
    M.set(agent, 'idle') -- the hooks' agent: a rejected dialog (its turn ends without a hook)
  end
end

---@param agent gemini_companion.Agent
local function read_screen(agent)
  if agent.buf then
    if vim.api.nvim_buf_is_valid(agent.buf) then
      from_screen(agent, vim.api.nvim_buf_get_lines(agent.buf, -SCREEN_LINES, -1, false))
    end
  elseif agent.pane and not agent.reading then
    agent.reading = true -- tmux: asynchronous, one read at a time
    local ok = pcall(vim.system, { 'tmux', 'capture-pane', '-p', '-t', agent.pane }, { text = true }, function(done)
      vim.schedule(function()
        agent.reading = false
        if done.code == 0 then
          from_screen(agent, vim.split(done.stdout or '', '\n', { plain = true }))
        end
      end)
    end)
    if not ok then
      agent.reading = false
    end
  end
end

local function tick()
  local any = false
  for _, item in ipairs(package.loaded['gemini_companion.agents'] and agents().list() or {}) do
    local agent = agents().get(item.name)
    if agent and watched(agent) then
      any = true
      read_screen(agent)
    end
  end
  if not any and timer then
    timer:stop()
  end
end

ensure_poll = function()
  local any = false
  for _, item in ipairs(package.loaded['gemini_companion.agents'] and agents().list() or {}) do
    local agent = agents().get(item.name)
    any = any or (agent ~= nil and watched(agent))
  end
  if not any then
    return
  end
  timer = timer or assert(vim.uv.new_timer())
  if not timer:is_active() then
    timer:start(POLL_MS, POLL_MS, vim.schedule_wrap(tick))
  end
end

-- --- an agent's life (agents/init.lua) ----------------------------------------------------

---@param agent gemini_companion.Agent
function M.started(agent)
  agent.heard = false
  M.set(agent, 'starting')
end

---@param agent gemini_companion.Agent
function M.exited(agent)
  agent.finish = nil
  M.set(agent, 'exited')
end

-- --- events --------------------------------------------------------------------------------

local group = vim.api.nvim_create_augroup('gemini_companion_attention', { clear = true })
vim.api.nvim_create_autocmd('FocusLost', {
  group = group,
  callback = function()
    focused = false
  end,
})
vim.api.nvim_create_autocmd('FocusGained', {
  group = group,
  callback = function()
    focused = true
  end,
})
vim.api.nvim_create_autocmd('User', {
  group = group,
  pattern = 'GeminiTurnEnded',
  callback = function(ev)
    local data = type(ev.data) == 'table' and ev.data or {}
    local count = type(data.files) == 'table' and #data.files or 0
    local agent = type(data.agent) == 'string'
      and package.loaded['gemini_companion.agents']
      and agents().get(data.agent)
    if agent then
      agent.turn_files = count
      if agent.finish then
        say_finished(agent)
      end
    end
  end,
})
return M
