--- Conversations that come back: `:Gemini resume`, `:Gemini sessions`, the `resume` option, and
--- the workaround for Gemini CLI's resume data-loss bug (an orphan file; see `sweep`).
--- Gemini's sessions are read from its own files (its `--list-sessions` may ask the model for
--- summaries: a minute offline); Qwen's come from `qwen sessions list --json`. What those files and
--- that output hold is data: ids are checked, texts are shown on one bounded line.
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')
local whole_files = require('gemini_companion.files')

local M = {}

M.TIMEOUT_MS = 20000 -- the Qwen listing (a node start: ~1-2 s)
M.SLOW_MS = 1000 -- say that the listing runs, after this long
local MAX_FILE = 64 * 1024 * 1024 -- a Gemini session file larger than this is not listed
local ORPHAN_MAX = 1024 * 1024 -- an orphan holds a header and the preamble: a few KB
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
  local spec = config.options.agents[name]
  return spec and require('gemini_companion.agents.cli_settings').cli_of(name, spec.cmd)
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

--- Seconds since the epoch of an ISO 8601 UTC time ('2026-11-25T22:14:31.820Z').
---@param iso any
---@return number?
function M.epoch(iso)
  local y, mo, d, h, mi, s = (type(iso) == 'string' and iso or ''):match('^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)')
  if not y then
    return nil
  end
  y, mo = tonumber(y) - (tonumber(mo) <= 2 and 1 or 0), tonumber(mo)
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + tonumber(d) - 1
  local days = era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
end

--- The text of a Gemini message's content (a string, or a list of parts).
---@param content any
---@return string
local function content_text(content)
  if type(content) == 'string' then
    return content
  end
  local parts = {}
  for _, part in ipairs(type(content) == 'table' and content or {}) do
    if type(part) == 'string' then
      table.insert(parts, part)
    elseif type(part) == 'table' and type(part.text) == 'string' then
      table.insert(parts, part.text)
    end
  end
  return table.concat(parts)
end

--- A prompt the CLI would resume from (the CLI's isResumableMessageRecord for a user message).
---@param record any
---@return string?
local function prompt_of(record)
  if type(record) ~= 'table' or record.type ~= 'user' then
    return nil
  end
  local text = vim.trim(content_text(record.content))
  for _, ignored in ipairs({ '/', '?', '<session_context>', '<hook_context>' }) do
    if text == '' or vim.startswith(text, ignored) then
      return nil
    end
  end
  return text
end

--- Would the CLI resume from this record (its isResumableMessageRecord): a prompt, or a message of
--- the model with content, tool calls or thoughts?
---@param record any
---@return boolean
local function resumable_record(record)
  if prompt_of(record) then
    return true
  end
  if type(record) ~= 'table' or record.type ~= 'gemini' then
    return false
  end
  local has = function(v)
    return v ~= nil and v ~= vim.NIL and v ~= '' and not (type(v) == 'table' and next(v) == nil)
  end
  return has(record.content) or has(record.toolCalls) or has(record.thoughts)
end

--- One Gemini session file (JSON lines: a header, message records, `{"$set": …}` updates), read as
--- gemini-cli 0.61.0 reads it. Once a prompt is found, only the short updates are decoded (a turn's
--- tool output can be large). `prompt` is nil when the file holds no prompt (the CLI does not list it).
---@param text string
---@return {id: string, prompt: string?, title: string?, updated: number?, subagent: boolean, resumable: boolean}?
function M.parse_gemini(text)
  local meta, prompt, resumable = {}, nil, false
  for line in text:gmatch('[^\n]+') do
    local wanted = not (prompt and resumable)
      or (#line < 65536 and (line:find('^%s*{%s*"%$set"') or line:find('"sessionId"', 1, true)))
    local ok, record = false, nil
    if wanted then
      ok, record = pcall(vim.json.decode, line)
    end
    if ok and type(record) == 'table' then
      local set = type(record['$set']) == 'table' and record['$set'] or (record.sessionId and record) or nil
      if set then
        for _, key in ipairs({ 'sessionId', 'startTime', 'lastUpdated', 'summary', 'kind' }) do
          if set[key] ~= nil then
            meta[key] = set[key]
          end
        end
        for _, msg in ipairs(type(set.messages) == 'table' and set.messages or {}) do
          prompt = prompt or prompt_of(msg)
          resumable = resumable or resumable_record(msg)
        end
      else
        prompt = prompt or prompt_of(record)
        resumable = resumable or resumable_record(record)
      end
    end
  end
  if type(meta.sessionId) ~= 'string' or not meta.sessionId:match(UUID) then
    return nil
  end
  return {
    id = meta.sessionId,
    prompt = prompt,
    title = type(meta.summary) == 'string' and meta.summary or nil,
    updated = M.epoch(meta.lastUpdated) or M.epoch(meta.startTime),
    subagent = meta.kind == 'subagent',
    resumable = resumable,
  }
end

--- Qwen's `sessions list --json` output (one object a line), newest first as given.
---@param text string
---@return gemini_companion.Session[]
function M.parse_qwen(text)
  local sessions = {}
  for line in (text or ''):gmatch('[^\n]+') do
    local ok, item = pcall(vim.json.decode, line)
    if ok and type(item) == 'table' and type(item.sessionId) == 'string' and item.sessionId:match(UUID) then
      table.insert(sessions, {
        id = item.sessionId,
        title = type(item.customTitle) == 'string' and item.customTitle or nil,
        prompt = type(item.prompt) == 'string' and item.prompt or nil,
        updated = type(item.mtime) == 'number' and item.mtime / 1000 or M.epoch(item.startTime),
      })
    end
  end
  return sessions
end

--- Newest first; one entry per id (the CLI keeps a resumed session's newest file).
---@param sessions gemini_companion.Session[]
---@return gemini_companion.Session[]
local function newest_first(sessions)
  local by_id, list = {}, {}
  for _, session in ipairs(sessions) do
    local seen = by_id[session.id]
    if not seen or (session.updated or 0) > (seen.updated or 0) then
      by_id[session.id] = session
    end
  end
  for _, session in pairs(by_id) do
    table.insert(list, session)
  end
  table.sort(list, function(a, b)
    if (a.updated or 0) ~= (b.updated or 0) then
      return (a.updated or 0) > (b.updated or 0)
    end
    return a.id < b.id
  end)
  return list
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
  text = vim.fn.strtrans((text:gsub('%s+', ' ')))
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
  return require('gemini_companion.agents.cli_settings').home(cli, (config.options.agents[name] or {}).env)
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

--- The session files in `chats` by their short id (the uuid's first 8 digits in the name).
---@param chats string
---@return table<string, string[]>
local function files_by_short_id(chats)
  local groups = {}
  for file, kind in vim.fs.dir(chats) do
    local short = kind == 'file' and file:match('^session%-.+%-(%x%x%x%x%x%x%x%x)%.jsonl?$')
    if short then
      groups[short] = groups[short] or {}
      table.insert(groups[short], file)
    end
  end
  return groups
end

--- The start of a regular file of ours (not a link), up to `limit` bytes.
---@param path string
---@param limit integer
---@return string? text, boolean whole
local function read_own(path, limit)
  local stat = vim.uv.fs_lstat(path)
  if not stat or stat.type ~= 'file' or stat.uid ~= vim.uv.getuid() then
    return nil, false
  end
  local fd = vim.uv.fs_open(path, whole_files.READ_NOW, 0) -- a FIFO swapped in since is not waited on
  if not fd then
    return nil, false
  end
  local opened = vim.uv.fs_fstat(fd) -- the file looked at, not one swapped in since
  local text = opened
    and opened.ino == stat.ino
    and opened.dev == stat.dev
    and vim.uv.fs_read(fd, math.min(stat.size, limit), 0)
  vim.uv.fs_close(fd)
  return text or nil, stat.size <= limit
end

--- Gemini CLI 0.61.0's resume bug (google-gemini/gemini-cli#27368): a resumed run opens a second
--- file of the same session (the minute of the resume in its name) that never gets a message; the
--- next start of any `gemini` takes it for corrupted and deletes every file of that session's
--- short id, the conversation with it. Delete only a file proven to be that orphan: in the chats
--- folder, a regular file of ours, whole (small), with nothing the CLI would resume from, whose
--- session id another file of the same short id holds with something it would. `only`: that file
--- alone (the one a resumed agent's SessionStart names). Returns the files deleted.
---@param chats string?
---@param only? string a file name in `chats`
---@return string[]
function M.sweep(chats, only)
  local deleted = {}
  local dir = chats and vim.uv.fs_lstat(chats)
  if not (dir and dir.type == 'directory' and dir.uid == vim.uv.getuid()) then
    return deleted
  end
  for short, files in pairs(files_by_short_id(chats)) do
    if #files > 1 and (not only or vim.list_contains(files, only)) then
      local parsed = {}
      for _, file in ipairs(files) do
        local text, whole = read_own(chats .. '/' .. file, ORPHAN_MAX)
        local session = text and M.parse_gemini(text)
        if session and session.id:sub(1, 8) == short then
          parsed[file] = { session = session, whole = whole }
        end
      end
      for file, orphan in pairs(parsed) do
        local kept = false
        for other, info in pairs(parsed) do
          kept = kept or (other ~= file and info.session.id == orphan.session.id and info.session.resumable)
        end
        if
          (not only or file == only)
          and orphan.whole
          and not orphan.session.resumable
          and kept
          and vim.uv.fs_unlink(chats .. '/' .. file)
        then
          table.insert(deleted, file)
        end
      end
    end
  end
  return deleted
end

--- A resumed Gemini agent's SessionStart named its transcript: if that is the bug's orphan (only
--- in the CLI version that has the bug), delete it now, before any other `gemini` starts and
--- takes the conversation with it (the running agent never writes to it).
---@param agent gemini_companion.Agent
---@param transcript any SessionStart's `transcript_path`
---@return string[] deleted
function M.orphan(agent, transcript)
  if agent.cli ~= 'gemini' or not (agent.version or ''):match('^0%.61%.') or type(transcript) ~= 'string' then
    return {}
  end
  local chats = M.gemini_chats(agent.name)
  local file = chats and vim.fs.basename(transcript)
  if not file or chats .. '/' .. file ~= transcript then
    return {}
  end
  return M.sweep(chats, file)
end

--- A file's bytes, read off the main loop; `done(nil)` when it cannot be read or is too large.
---@param path string
---@param done fun(text: string?)
local function read_async(path, done)
  done = vim.schedule_wrap(done)
  vim.uv.fs_open(path, whole_files.READ_NOW, 0, function(_, fd) -- a FIFO would hold a libuv worker
    if not fd then
      return done(nil)
    end
    vim.uv.fs_fstat(fd, function(_, stat)
      if not stat or stat.type ~= 'file' or stat.size > MAX_FILE then
        vim.uv.fs_close(fd, function() end)
        return done(nil)
      end
      vim.uv.fs_read(fd, stat.size, 0, function(_, data)
        vim.uv.fs_close(fd, function() end)
        done(data)
      end)
    end)
  end)
end

--- Gemini: every session file of the workspace, read one by one (each parsed in its own turn of
--- the main loop).
---@param name string
---@param done fun(sessions: gemini_companion.Session[]?, err: string?)
local function list_gemini(name, done)
  local chats = M.gemini_chats(name)
  local files = {}
  for _, group in pairs(chats and files_by_short_id(chats) or {}) do
    vim.list_extend(files, group)
  end
  local sessions, i = {}, 0
  local function next_file()
    i = i + 1
    if i > #files then
      return done(newest_first(sessions))
    end
    read_async(chats .. '/' .. files[i], function(text)
      local session = text and M.parse_gemini(text)
      if session and session.prompt and not session.subagent then
        table.insert(sessions, session)
      end
      next_file()
    end)
  end
  next_file()
end

--- Qwen: `<its command> sessions list --json` in the workspace, with a timeout.
---@param name string
---@param done fun(sessions: gemini_companion.Session[]?, err: string?)
local function list_qwen(name, done)
  local spec = config.options.agents[name]
  local cmd = vim.list_extend(vim.deepcopy(spec.cmd), { 'sessions', 'list', '--json', '--limit', '100' })
  local ok, err = pcall(vim.system, cmd, {
    cwd = vim.fn.getcwd(),
    env = spec.env,
    text = true,
    timeout = M.TIMEOUT_MS,
  }, function(out)
    vim.schedule(function()
      if out.code ~= 0 then
        local why = out.code == 124 and ('no answer in %d s'):format(M.TIMEOUT_MS / 1000)
          or one_line(vim.trim(out.stderr or '') ~= '' and vim.trim(out.stderr) or ('exit code ' .. out.code), 80)
        return done(nil, why)
      end
      done(M.parse_qwen(out.stdout))
    end)
  end)
  if not ok then
    done(nil, one_line(tostring(err), 80))
  end
end

--- The workspace's sessions of an agent, newest first; `done` is called once, on the main loop.
---@param name string
---@param done fun(sessions: gemini_companion.Session[]?, err: string?)
function M.list(name, done)
  local cli = cli_of(name)
  if not cli then
    return done(nil, ('%s: sessions are known for Gemini CLI and Qwen Code only'):format(name))
  end
  local finished = false
  local slow = vim.defer_fn(function()
    if not finished then
      message.echo(('listing %s sessions…'):format(name))
    end
  end, M.SLOW_MS);
  (cli == 'gemini' and list_gemini or list_qwen)(name, function(sessions, err)
    finished = true
    if not slow:is_closing() then
      slow:stop()
      slow:close()
    end
    done(sessions, err)
  end)
end

--- The agent's name, or nil after saying in one line why it cannot be resumed now.
---@param name? string
---@return string? name, ('gemini'|'qwen')? cli
local function resumable(name)
  name = require('gemini_companion.agents').resolve(name)
  local agents = require('gemini_companion.agents')
  if not config.options.agents[name] then
    message.notify(('no agent %q (agents: %s)'):format(name, table.concat(agents.names(), ', ')), 'error')
    return nil
  end
  local cli = cli_of(name)
  if not cli then
    message.notify(('%s: resuming is known for Gemini CLI and Qwen Code only'):format(name), 'error')
    return nil
  end
  if agents.get(name) then
    -- Its conversation goes on and is saved as it goes: nothing to resume, nothing to stop unasked.
    message.notify(('%s is running: /quit it first to resume another conversation'):format(name), 'warn')
    agents.open(name)
    return nil
  end
  return name, cli
end

--- `:Gemini resume [agent]`: start the agent on the workspace's latest conversation.
---@param name? string
function M.resume(name)
  local cli
  name, cli = resumable(name)
  if name and cli then
    consulted[name] = true
    require('gemini_companion.agents').open(name, M.args(cli))
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
      return message.notify(('%s sessions: %s'):format(name, err or '?'), 'warn')
    end
    if #sessions == 0 then
      return message.notify(('%s: no earlier conversations in %s'):format(name, one_line(vim.fn.getcwd(), 60)))
    end
    vim.ui.select(
      sessions,
      { prompt = ('Resume a %s conversation'):format(name), format_item = M.format },
      function(pick)
        if pick and resumable(name) then
          consulted[name] = true
          require('gemini_companion.agents').open(name, M.args(cli, pick.id))
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
  local mode, cli = config.options.resume, cli_of(name)
  if consulted[name] or mode == 'never' or not cli then
    return false
  end
  consulted[name] = true
  for _, word in ipairs(config.options.agents[name].cmd) do
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
  end)
  return true
end

return M
