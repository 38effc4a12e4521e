--- Conversations that come back: `:Gemini resume`, `:Gemini sessions`, the `resume` option, and
--- the workaround for Gemini CLI's resume data-loss bug (an orphan file; see `sweep`).
--- Gemini's sessions are read from its own files (its `--list-sessions` may ask the model for
--- summaries: a minute offline); Qwen's come from `qwen sessions list --json`. Both off the main
--- loop (sessions/lister.lua). What those files and that output hold is data: ids are checked,
--- texts are shown on one bounded line.
local config = require('gemini_companion.config')
local lister = require('gemini_companion.agents.sessions.lister')
local instances = require('gemini_companion.agents.instances')
local message = require('gemini_companion.message')

local M = {}

M.TIMEOUT_MS = 20000 -- a listing (Qwen's: a node start, ~1-2 s), ended whole after this long
M.SLOW_MS = 1000 -- say that the listing runs, after this long
local QUESTION_LIMIT = 10 -- sessions read to ask about the newest (files newest first)
local TEXT_WIDTH = 72
local RESUME_FLAGS = { ['--resume'] = true, ['-r'] = true, ['--continue'] = true, ['-c'] = true }
local UUID = '^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$'

---@class gemini_companion.Session
---@field id string The CLI's session id (a UUID).
---@field title string? A summary or title, when the CLI has one.
---@field prompt string? The first prompt.
---@field updated number? Last change, seconds since the epoch.

--- Agents whose first `:Gemini` in this Neovim has consulted `resume`.
---@type table<string, boolean>
local consulted = {}

---@param name string
---@return ('gemini'|'qwen')?
local function cli_of(name)
  local entry = instances.entry(name)
  return entry and require('gemini_companion.agents.cli_settings').cli_of(entry, instances.spec(entry).cmd)
end

--- The arguments that resume `id` (nil: the workspace's latest session; safe when there is none).
---@param cli 'gemini'|'qwen'
---@param id? string
---@return string[]
function M.args(cli, id)
  if id then
    return { '--resume', id }
  end
  return cli == 'gemini' and { '--resume', 'latest' } or { '--continue' }
end

---@param seconds number?
---@return string
local function age(seconds)
  if not seconds then
    return '?'
  end
  local ago = math.max(os.time() - seconds, 0)
  for _, unit in ipairs({ { 86400, 'd' }, { 3600, 'h' }, { 60, 'min' } }) do
    if ago >= unit[1] then
      return ('%d %s ago'):format(math.floor(ago / unit[1]), unit[2])
    end
  end
  return 'just now'
end

--- Text from a session file or a CLI's output, as one bounded, printable line.
---@param text string
---@param width integer
---@return string
local function one_line(text, width)
  -- NUL first: Vim functions take a string holding one for a Blob (E976).
  text = vim.fn.strtrans((text:gsub('%z', '^@'):gsub('%s+', ' ')))
  if vim.fn.strdisplaywidth(text) > width then
    text = vim.fn.strcharpart(text, 0, width - 1) .. '…'
  end
  return text
end

--- How a session is shown in the list: its age, title (a summary) and first prompt.
---@param session gemini_companion.Session
---@return string
function M.format(session)
  local title, prompt = session.title and vim.trim(session.title), session.prompt and vim.trim(session.prompt)
  local parts = { age(session.updated) }
  if title and title ~= '' and title ~= prompt then
    table.insert(parts, one_line(title, 40))
  end
  table.insert(parts, one_line(prompt and prompt ~= '' and prompt or '(no prompt)', TEXT_WIDTH))
  return table.concat(parts, ' · ')
end

--- A CLI's folder for an agent (its own env first).
---@param name string
---@param cli 'gemini'|'qwen'
---@return string
local function cli_home(name, cli)
  return require('gemini_companion.agents.cli_settings').home(cli, (instances.spec(name) or {}).env)
end

--- The folder with this workspace's Gemini session files: `tmp/<slug>/chats`, the slug from
--- projects.json keyed by the working directory, as the CLI names it.
---@param name string
---@return string?
function M.gemini_chats(name)
  local root = cli_home(name, 'gemini')
  local registry = require('gemini_companion.json_file').read(root .. '/projects.json')
  local projects = type(registry) == 'table' and registry.projects
  local slug = type(projects) == 'table' and projects[vim.fn.getcwd()]
  if type(slug) ~= 'string' or not slug:match('^[%w._-]+$') or slug:match('^%.+$') then
    return nil
  end
  return root .. '/tmp/' .. slug .. '/chats'
end

--- Whether the workspace may have an earlier conversation: a session file exists (milliseconds;
--- spares the first `:Gemini` a listing, or Qwen's node start, in a new workspace).
---@param name string
---@param cli 'gemini'|'qwen'
---@return boolean
local function any_session(name, cli)
  local chats, pattern = M.gemini_chats(name), '^session%-.+%.jsonl?$'
  if cli == 'qwen' then
    local home = cli_home(name, 'qwen')
    -- Qwen's folder name: the path with each UTF-16 unit but [a-zA-Z0-9] made '-'.
    local slug = vim.fn.getcwd():gsub('[%z\1-\127\192-\255][\128-\191]*', function(char)
      return char:match('^%w$') or (#char == 4 and '--' or '-')
    end)
    chats, pattern = home .. '/projects/' .. slug .. '/chats', '^[%x-]+%.jsonl$'
  end
  if not chats then
    return false
  end
  for file in vim.fs.dir(chats) do
    if file:match(pattern) then
      return true
    end
  end
  return false
end

--- Gemini CLI 0.61.0's resume bug (google-gemini/gemini-cli#27368): a resumed run opens a second
--- file of the same session that never gets a message, and the next `gemini` start deletes every
--- file of that session's short id, the conversation with it. Delete (off the main loop) only a
--- file of `chats` proven to be that orphan (sessions_list.py `sweep` says how); `only`: that file
--- alone. `done(deleted)` on the main loop.
---@param chats string?
---@param only? string a file name in `chats`
---@param done? fun(deleted: string[])
function M.sweep(chats, only, done)
  done = done or function() end
  if not chats then
    return done({})
  end
  lister.run({ 'sweep', chats, only }, { timeout_ms = M.TIMEOUT_MS }, function(records)
    local deleted = records and records[1] and records[1].deleted
    done(type(deleted) == 'table' and deleted or {})
  end)
end

--- A resumed Gemini agent's SessionStart named its transcript: if that is the bug's orphan (only
--- in the CLI version that has the bug), delete it now, before any other `gemini` starts and
--- takes the conversation with it (the running agent never writes to it).
---@param agent gemini_companion.Agent
---@param transcript any SessionStart's `transcript_path`
---@param done? fun(deleted: string[])
function M.orphan(agent, transcript, done)
  done = done or function() end
  if agent.cli ~= 'gemini' or not (agent.version or ''):match('^0%.61%.') or type(transcript) ~= 'string' then
    return done({})
  end
  local chats = M.gemini_chats(agent.name)
  local file = chats and vim.fs.basename(transcript)
  if not file or chats .. '/' .. file ~= transcript then
    return done({})
  end
  M.sweep(chats, file, done)
end

--- The program's records as sessions (their ids checked).
---@param records table[]?
---@return gemini_companion.Session[]?
local function sessions_of(records)
  if not records then
    return nil
  end
  local sessions = {}
  for _, r in ipairs(records) do
    if type(r.id) == 'string' and r.id:match(UUID) then
      table.insert(sessions, {
        id = r.id,
        title = type(r.title) == 'string' and r.title or nil,
        prompt = type(r.prompt) == 'string' and r.prompt or nil,
        updated = type(r.updated) == 'number' and r.updated or nil,
      })
    end
  end
  return sessions
end

--- The workspace's sessions of an agent (the newest `limit`, else lister.LIMIT), newest first;
--- `done` is called once, on the main loop.
---@param name string
---@param done fun(sessions: gemini_companion.Session[]?, err: string?)
---@param limit? integer
function M.list(name, done, limit)
  local cli = cli_of(name)
  if not cli then
    return done(nil, ('%s: sessions are known for Gemini CLI and Qwen Code only'):format(name))
  end
  local chats = M.gemini_chats(name)
  limit = tostring(limit or lister.LIMIT)
  local args, opts = { 'gemini', chats, limit }, { timeout_ms = M.TIMEOUT_MS }
  if cli == 'gemini' and not chats then
    return done({})
  elseif cli == 'qwen' then
    local spec = instances.spec(name) --[[@as gemini_companion.AgentSpec]]
    -- Qwen's own lister, run by the program: its time limit first, then ours (a little later).
    args = { 'qwen', tostring(M.TIMEOUT_MS / 1000), limit, unpack(spec.cmd) }
    vim.list_extend(args, { 'sessions', 'list', '--json', '--limit', limit })
    opts = { timeout_ms = M.TIMEOUT_MS + 5000, cwd = vim.fn.getcwd(), env = spec.env }
  end
  local finished = false
  local slow = vim.defer_fn(function()
    if not finished then
      message.echo(('listing %s sessions…'):format(name))
    end
  end, M.SLOW_MS)
  lister.run(args, opts, function(records, err)
    finished = true
    if not slow:is_closing() then
      slow:stop()
      slow:close()
    end
    done(sessions_of(records), err)
  end)
end

--- The agent's name, or nil after saying in one line why it cannot be resumed now.
---@param name? string
---@return string? name, ('gemini'|'qwen')? cli
local function resumable(name)
  name = require('gemini_companion.agents').resolve(name)
  local agents = require('gemini_companion.agents')
  if not instances.entry(name) then
    message.notify(('no agent %q (agents: %s)'):format(name, table.concat(agents.names(), ', ')), 'error')
    return nil
  end
  local cli = cli_of(name)
  if not cli then
    message.notify(('%s: resuming is known for Gemini CLI and Qwen Code only'):format(name), 'error')
    return nil
  end
  return name, cli
end

--- Start `name` on a conversation (`args`). While a session of its entry runs, its conversation
--- goes on and is saved as it goes: nothing is stopped unasked (instances.lua asks beside it or in
--- its place; never focused here: entering its terminal would show `-- TERMINAL --` over the question).
---@param name string
---@param args string[]
local function start_on(name, args)
  local agents, entry = require('gemini_companion.agents'), instances.entry(name) --[[@as string]]
  consulted[entry] = true
  local busy = instances.running(entry)
  if #busy == 0 then
    return agents.open(name, args)
  end
  for _, session in ipairs(busy) do -- two CLIs writing one conversation's file mix it up
    if args[1] == '--resume' and args[2] == agents.get(session).conversation then
      return message.notify(('%s has that conversation open: :Gemini %s shows it'):format(session, session), 'warn')
    end
  end
  -- The one it would replace: the one named, else the last one used, else the first.
  local target = agents.get(name) and name or (vim.tbl_contains(busy, agents.last) and agents.last or busy[1])
  instances.resume_beside(target, args)
end

--- `:Gemini resume [agent]`: start the agent on the workspace's latest conversation.
---@param name? string
function M.resume(name)
  local cli
  name, cli = resumable(name)
  if name and cli then
    start_on(name, M.args(cli))
  end
end

--- `:Gemini sessions [agent]`: pick one of the workspace's conversations and resume it (by id).
---@param name? string
function M.sessions(name)
  local cli
  name, cli = resumable(name)
  if not (name and cli) then
    return
  end
  M.list(name, function(sessions, err)
    if not sessions then
      return message.notify(('%s sessions: %s'):format(name, one_line(err or '?', 100)), 'warn')
    end
    if #sessions == 0 then
      return message.notify(('%s: no earlier conversations in %s'):format(name, one_line(vim.fn.getcwd(), 60)))
    end
    vim.ui.select(
      sessions,
      { prompt = ('Resume a %s conversation'):format(name), format_item = M.format },
      function(pick)
        if pick then
          start_on(name, M.args(cli, pick.id))
        end
      end
    )
  end)
end

--- The first `:Gemini` of an agent in this Neovim, with no arguments: what `resume` says. Returns
--- true when it starts the agent itself (at once, or once answered).
---@param name string
---@return boolean
function M.consult(name)
  local mode, cli, entry = config.options.resume, cli_of(name), instances.entry(name)
  if not (cli and entry) or consulted[entry] or mode == 'never' then
    return false
  end
  consulted[entry] = true
  for _, word in ipairs(instances.spec(entry).cmd) do
    if RESUME_FLAGS[word] then
      return false -- its own command resumes already
    end
  end
  local agents = require('gemini_companion.agents')
  if mode == 'always' then
    agents.open(name, M.args(cli))
    return true
  end
  if #vim.api.nvim_list_uis() == 0 or not any_session(name, cli) then
    return false -- nobody to ask, or nothing to resume: a new conversation
  end
  -- The question names the newest, and the agent starts after it: the newest by their own last
  -- change among the files written last, not the 100 a listing shows (of 150 conversations of
  -- ~370 KB: 60-97 ms against 124-160 ms, load 6).
  M.list(name, function(sessions)
    local latest = sessions and sessions[1]
    if not latest then
      return agents.open(name, {})
    end
    local choices = { 'Resume: ' .. M.format(latest), 'Start a new conversation' }
    vim.ui.select(choices, { prompt = ('%s: resume your last conversation here?'):format(name) }, function(_, i)
      if i == 1 and agents.get(name) then -- started meanwhile (another :Gemini): never drop the answer silently
        return message.notify(('%s is running: /quit it first to resume that conversation'):format(name), 'warn')
      end
      agents.open(name, i == 1 and M.args(cli, latest.id) or {})
    end)
  end, QUESTION_LIMIT)
  return true
end

return M
