--- What agents changed, turn by turn (the turns come from changes.py): `:GeminiChanges` lists a
--- turn's files in the quickfix list; an entry opens "before the turn" beside the file as it is
--- now, in diff mode; reverts go hunk by hunk, file by file or the whole turn. A revert never
--- overwrites what changed after the turn (that hunk is refused and named) nor a buffer with
--- unsaved edits; a loaded buffer is reloaded with its old text in its undo history (`u`).
local env_names = require('gemini_companion.env')
local files = require('gemini_companion.files')
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')
local type_change = require('gemini_companion.changes.type_change')

local M = {}

local SCHEME = 'gemini-changes://'

---@class gemini_companion.FileChange
---@field path string relative to the turn's work tree
---@field status 'created'|'modified'|'deleted'
---@field added integer
---@field removed integer
---@field binary boolean

---@class gemini_companion.Turn
---@field id integer 0: a span of turns
---@field agent string
---@field boundary string
---@field git_dir string our snapshot repository (changes.py), never the user's
---@field alternates string GIT_ALTERNATE_OBJECT_DIRECTORIES to read its trees ('' for none)
---@field work_tree string
---@field before string tree at the turn's start
---@field after string tree at its end
---@field open boolean
---@field files gemini_companion.FileChange[]
---@field skipped string[]
---@field ended number? when it ended (os time, s); nil for a span

--- Each CLI's hook events for a turn's start, a tool's end and the turn's end, and those that
--- only tell the agent's state ('attention': a session start, a question for the user; the CLI
--- waits on them, Gemini before it draws its dialog, so hook.py hands them over at once), with
--- their timeouts in the CLI's unit (Gemini: ms; Qwen: s).
local HOOK_EVENTS = {
  gemini = {
    { 'BeforeAgent', 'turn-start', 10000 },
    { 'AfterTool', 'tool', 5000 },
    { 'AfterAgent', 'turn-end', 10000 },
    { 'Notification', 'attention', 3000 },
    { 'SessionStart', 'attention', 5000 },
  },
  qwen = {
    { 'UserPromptSubmit', 'turn-start', 10 },
    { 'PostToolUse', 'tool', 5 },
    { 'Stop', 'turn-end', 10 },
    { 'StopFailure', 'turn-end', 10 },
    { 'PermissionRequest', 'attention', 3 },
    { 'Notification', 'attention', 3 },
    { 'PreToolUse', 'attention', 3 },
    { 'SessionStart', 'attention', 5 },
  },
}

--- The command's first step: is this a terminal of a Neovim with the plugin's server? Outside
--- Neovim the key is unset and the hook ends here, at once and silently. A builtin test that
--- needs no `$` (a CLI expands `$VAR` in every settings string, from a project's `.env` too) and
--- that bash 3.2 knows.
local GATE = ('declare -p %s >/dev/null 2>&1 || exit 0; '):format(env_names.hook_key)
--- Earlier versions' hook command, which `eval`ed the environment: recognised and replaced.
local OLD_GATE = ('[ -z "$%s" ] || eval "$%s '):format(env_names.old_hook, env_names.old_hook)
--- What bash and the loader act on as they start, made inert in the hook's own environment (the
--- CLIs apply an entry's `env` over theirs, `.env` included): contract.STARTUP_ENV's twin.
local HOOK_ENV = {
  BASH_ENV = '',
  ENV = '',
  SHELLOPTS = '',
  BASHOPTS = '',
  PS4 = '+ ',
  LD_PRELOAD = '',
  LD_AUDIT = '',
  LD_LIBRARY_PATH = '',
  LD_DEBUG = '',
  LD_DEBUG_OUTPUT = '',
  LD_PROFILE = '',
  LD_PROFILE_OUTPUT = '',
  DYLD_INSERT_LIBRARIES = '',
  DYLD_LIBRARY_PATH = '',
  DYLD_FRAMEWORK_PATH = '',
  DYLD_FALLBACK_LIBRARY_PATH = '',
  DYLD_FALLBACK_FRAMEWORK_PATH = '',
}

--- The name a CLI shows while our hooks run (Gemini: "Executing Hook: gemini-companion").
local NAME = 'gemini-companion'

local said_refused = false -- the refusal is said once per session

--- `path` in single quotes for bash; nil when it is not absolute or holds what a shell or a
--- CLI's settings would act on (`$`, quotes, a backslash, control characters).
---@param path string
---@return string?
local function shell_path(path)
  if path:sub(1, 1) ~= '/' or path:find('[%c$\'"`\\]') then
    return nil
  end
  return "'" .. path .. "'"
end

--- How a CLI's settings run our hooks: event -> the one entry we add to its array. The command
--- holds no `$` and runs one fixed program, the plugin's own Python isolated (`-I`: no PYTHON*
--- variable, no user site) on hook.py, which reports to this Neovim only (see hook.py). If the
--- Python or the file is gone it prints `{}` and exits 0, like hook.py itself: a hook can
--- neither fail nor block the agent (exit 127 would block Gemini's turn).
---@param cli 'gemini'|'qwen'
---@return table<string, table>? entries, nil when turned off (changes.enabled) or refused
function M.hooks(cli)
  if not require('gemini_companion.config').options.changes.enabled then
    return nil
  end
  local python = host.python()
  local py = shell_path(python:sub(1, 1) == '/' and python or vim.fn.exepath(python))
  local script = shell_path(host.plugin .. '/programs/hook.py')
  if not (py and script) then
    if not said_refused then
      said_refused = true
      local bad = vim.fn.strtrans(py and host.plugin or python) -- one line, whatever it holds
      message.notify(('turn hooks not registered: no hook command can name %s'):format(bad), 'warn')
    end
    return nil
  end
  local run = ('[[ -x %s && -f %s ]] && %s -I -S %s'):format(py, script, py, script)
  local entries = {}
  for _, event in ipairs(HOOK_EVENTS[cli]) do
    local command = ("%s%s %s || echo '{}'; exit 0"):format(GATE, run, event[2])
    local hook = { type = 'command', name = NAME, command = command, timeout = event[3], env = HOOK_ENV }
    entries[event[1]] = { hooks = { hook } }
  end
  return entries
end

--- Gemini's `hooksConfig.disabled` item that keeps our hooks off outside Neovim. Gemini shows
--- every hook it runs (but a system administrator's) for at least 3 s, however fast it exits;
--- it expands `${VAR:-default}` in its settings as it reads them, and runs no hook whose name
--- that list holds. The key is set only in this Neovim's terminals and its agents (there the
--- item is an opaque key, no hook's name): elsewhere it reads our hooks' name, so Gemini neither
--- runs nor shows them. Not a command: nothing here is run.
---@return string
function M.off_outside_neovim()
  return ('${%s:-%s}'):format(env_names.hook_key, NAME)
end

--- Our hooks' name (a user may list it in Gemini's `hooksConfig.disabled` to turn them off).
M.hook_name = NAME

--- Is `entry`, an item of a CLI's hook array, one the plugin wrote (any version, path, event,
--- timeout)?
---@param entry any
---@return boolean
function M.ours(entry)
  local hooks = type(entry) == 'table' and entry.hooks
  local hook = type(hooks) == 'table' and #hooks == 1 and hooks[1]
  local command = type(hook) == 'table' and hook.command
  return type(command) == 'string' and (vim.startswith(command, GATE) or vim.startswith(command, OLD_GATE))
end

--- Ended turns, oldest first (bounded: config changes.max_turns).
---@type gemini_companion.Turn[]
M.turns = {}

---@type table<integer, gemini_companion.Turn> shown turns by id (spans too), for the diff buffers
local shown = {}

--- A turn ended (changes.py): remember it, tell the user and `User GeminiTurnEnded`.
---@param turn gemini_companion.Turn
function M.turn_ended(turn)
  table.insert(M.turns, turn)
  local max = require('gemini_companion.config').options.changes.max_turns
  while #M.turns > max do
    table.remove(M.turns, 1)
  end
  shown[turn.id] = turn
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiTurnEnded',
    modeline = false,
    data = { turn = turn.id, agent = turn.agent, files = turn.files },
  })
  if #turn.files > 0 then
    message.brief(
      ('%s changed %d file%s (:GeminiChanges)'):format(turn.agent, #turn.files, #turn.files == 1 and '' or 's')
    )
  end
end

-- --- reading the three versions -------------------------------------------------------------

--- git reading the turn's snapshot repository: ours (changes.py made it, with its own config:
--- no hook, no fsmonitor), never the user's, and no GIT_* variable of Neovim's can send git
--- elsewhere. `cat-file` and `ls-tree` print stored bytes: no filter or textconv runs. The
--- user's object store (the alternate) only while its info/alternates is absent or a regular file:
--- git opens it, and a FIFO there would hold Neovim. One line each: `why` when git gave no
--- answer, `unread` when the alternate was not read (the user's blobs are missing then).
---@param turn gemini_companion.Turn
---@param args string[]
---@param opts {stdin?: string, text?: boolean}
---@return vim.SystemCompleted|{why: string?, unread: string?}
local function git(turn, args, opts)
  local env = {}
  for key, value in pairs(vim.fn.environ()) do
    if not vim.startswith(key, 'GIT_') then
      env[key] = value
    end
  end
  local unread = nil
  if turn.alternates ~= '' then -- changes.py's C-quoted path: "...\ooo..."
    local objects = (
      turn.alternates:sub(2, -2):gsub('\\(%d%d%d)', function(octal)
        return string.char(tonumber(octal, 8))
      end)
    )
    local info, _, err = vim.uv.fs_lstat(objects .. '/info/alternates')
    if (info and info.type ~= 'file') or (not info and err ~= 'ENOENT' and err ~= 'ENOTDIR') then
      unread = ('%s/info/alternates is not a regular file, its objects are not read: left as it is'):format(
        vim.fn.strtrans(objects)
      )
    else
      env.GIT_ALTERNATE_OBJECT_DIRECTORIES = turn.alternates
    end
  end
  local argv = vim.list_extend({ 'git', '--no-pager', '--git-dir', turn.git_dir }, args)
  local run = { stdin = opts.stdin, text = opts.text, env = env, clear_env = true, cwd = turn.git_dir }
  local ok, job = pcall(vim.system, argv, run)
  local done = ok and job:wait(5000) or { code = -1, signal = 0, stdout = '', stderr = tostring(job) }
  -- Killed at the time limit (git itself never exits 124), or by anyone: its output may be cut short.
  local why = done.code == 124 and 'git gave no answer in 5 s: left as it is'
    or (done.signal or 0) ~= 0 and ('git was stopped (signal %d): left as it is'):format(done.signal)
    or nil
  return vim.tbl_extend('force', done, { why = why, unread = unread })
end

--- A version of a file in a tree, as changes_put takes it.
---@class gemini_companion.Version
---@field kind 'file'|'link'|'none'|'folder' a folder only when asked for (type_change.lua)
---@field data string? bytes, or a link's target
---@field mode string? git's mode: '100644', '100755', '120000'

---@param data string?
---@param mode string
---@return gemini_companion.Version
local function version(data, mode)
  return { kind = data == nil and 'none' or mode == '120000' and 'link' or 'file', data = data, mode = mode }
end

-- Files whose versions are read together (three git runs; `undo` goes a batch at a time): few
-- runs, never every version of a huge turn in memory at once, arguments far below the kernel's
-- limits however long the names.
local BATCH = 64
-- Git's modes of what a revert can put back: a file, an executable, a symlink.
local FILE_MODES = { ['100644'] = true, ['100755'] = true, ['120000'] = true }

--- `paths`' entries in `tree`: path -> git's mode and object id (a path the tree lacks is
--- absent), or nil and why when git cannot read the tree (pruned). Each path is a literal name
--- (no glob, no `:` magic) and the answer NUL-terminated: any name works, a newline included.
---@param turn gemini_companion.Turn
---@param tree string
---@param paths string[] at most BATCH
---@return table<string, {mode: string, oid: string}>? entries, string? why
local function entries(turn, tree, paths)
  -- -t: a folder named beside a path inside it is still listed (else git only descends).
  local args = vim.list_extend({ '--literal-pathspecs', 'ls-tree', '-t', '-z', '--full-tree', tree, '--' }, paths)
  local done = git(turn, args, {})
  if done.code ~= 0 or done.why then
    return nil, done.why
  end
  local found = {}
  for record in vim.gsplit(done.stdout or '', '\0', { plain = true }) do
    local mode, oid, name = record:match('^(%d+) %a+ (%x+)\t(.*)$')
    if name then
      found[name] = { mode = mode, oid = oid }
    end
  end
  return found
end

--- The files in the turn's two trees (kind 'none' where absent), their bytes read by object id
--- in one `git cat-file --batch`: a name never enters that line protocol. Three git runs for a
--- batch of files (three runs per file held Neovim 650 ms for a turn of 100). A path gets
--- `err` instead when a tree or its blob is gone (pruned: absent would say nothing) or its entry
--- is not a file or a link (a folder's is kind 'folder', without its files, when `folders`).
---@param turn gemini_companion.Turn
---@param paths string[] at most BATCH
---@param folders boolean?
---@return table<string, {before: gemini_companion.Version?, after: gemini_companion.Version?, err: string?}>
local function versions_of(turn, paths, folders)
  local gone = "the turn's snapshot is gone (pruned): left as it is"
  local sides, ids = {}, {}
  for i, tree in ipairs({ turn.before, turn.after }) do
    local found, why = entries(turn, tree, paths)
    if not found then
      local each = {}
      for _, path in ipairs(paths) do
        -- git failed on the batch (a folder object gone, say): one by one, the others still read.
        each[path] = (#paths > 1 and not why) and versions_of(turn, { path }, folders)[path] or { err = why or gone }
      end
      return each
    end
    sides[i] = found
  end
  for _, path in ipairs(paths) do
    for i = 1, 2 do
      local e = sides[i][path]
      if e and FILE_MODES[e.mode] then -- only what was asked; a folder's or submodule's object never
        ids[#ids + 1] = e.oid
      end
    end
  end
  local data = {}
  if #ids > 0 then
    local done = git(turn, { 'cat-file', '--batch' }, { stdin = table.concat(ids, '\n') .. '\n' })
    -- Cut short (stopped, timed out): nothing of it is taken, the last record may be partial.
    local out = done.code == 0 and not done.why and done.stdout or ''
    gone = done.why or done.unread or gone
    local at = 1
    while true do
      local header_end = out:find('\n', at, true)
      if not header_end then
        break
      end
      local oid, kind, size = out:sub(at, header_end - 1):match('^(%x+) (%a+) (%d+)$')
      local after = size and header_end + tonumber(size) + 1 -- the record's closing newline
      if size and out:sub(after, after) ~= '\n' then
        break -- a record that does not end where its header says: nothing after it is trusted
      elseif size then
        data[oid] = kind == 'blob' and out:sub(header_end + 1, after - 1) or nil
        at = after + 1
      else
        at = header_end + 1 -- "<oid> missing"
      end
    end
  end
  local result = {}
  for _, path in ipairs(paths) do
    local out = {}
    for i = 1, 2 do
      local e = sides[i][path] or {}
      local folder = folders and e.mode == '040000'
      if e.mode and not FILE_MODES[e.mode] and not folder then
        out.err = "the turn's snapshot holds no file here: left as it is"
      elseif e.oid and not data[e.oid] and not folder then
        out.err = out.err or gone
      end
      out[i] = folder and { kind = 'folder' } or version(e.oid and data[e.oid], e.mode or '')
    end
    result[path] = out.err and { err = out.err } or { before = out[1], after = out[2] }
  end
  return result
end

--- One file's two versions (see versions_of).
---@param turn gemini_companion.Turn
---@param path string
---@return gemini_companion.Version? before, gemini_companion.Version? after, string? error
local function versions(turn, path)
  local found = versions_of(turn, { path }, true)[path]
  return found.before, found.after, found.err
end

---@param path string absolute
---@return integer? buf a loaded buffer of the file
local function loaded(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do -- exact names (bufnr() also takes a partial match)
    local name = vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf)
    if name and name ~= '' and (name == path or vim.uv.fs_realpath(name) == path) then
      return buf
    end
  end
end

--- What `path` is now, from disk (an unmodified buffer may be a stale view of it; a file whose
--- buffer has unsaved edits is refused before its text matters): its kind ('file', 'link',
--- 'none', or another type: a FIFO is never read), a file's bytes or a link's target, its mode
--- bits, and its loaded buffer. Only to decide and to diff: changes_put checks it again as it writes.
---@param path string absolute
---@return string kind, string? data, integer? mode, integer? buf
local function current(path)
  local info = vim.uv.fs_lstat(path)
  local kind = info and info.type or 'none'
  local data = kind == 'file' and files.read(path) or kind == 'link' and vim.uv.fs_readlink(path) or nil
  if (kind == 'file' or kind == 'link') and not data then
    kind = kind .. ' that cannot be read' -- too large, or swapped for a FIFO since the lstat: refused
  end
  return kind, data, info and info.mode, loaded(path)
end

---@param mode integer? lstat's mode
---@return string git's mode of a regular file with it
local function file_mode(mode)
  return math.floor((mode or 0) / 64) % 2 == 1 and '100755' or '100644'
end

---@param text string?
---@return string[] lines, boolean eol
local function split(text)
  if not text or text == '' then
    return {}, false
  end
  local eol = text:sub(-1) == '\n'
  return vim.split(eol and text:sub(1, -2) or text, '\n', { plain = true }), eol
end

-- --- writing -----------------------------------------------------------------------------------

--- Reload an unmodified buffer from disk, keeping what it showed in its undo history.
---@param buf integer
local function reload(buf)
  local undoreload = vim.o.undoreload
  vim.o.undoreload = math.max(undoreload, vim.api.nvim_buf_line_count(buf) + 1)
  pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('silent edit!')
  end)
  vim.o.undoreload = undoreload
end

--- Make the file `want` if it is still `expect` (else refuse), in the host: it walks from the
--- work tree one folder at a time without following a symlink, so a folder an agent swaps for a
--- link mid-revert never sends a write or a delete outside. Exact bytes, link target and execute
--- bit; a file's other mode bits kept. Then reload its buffer (`u` takes the revert back), or
--- delete an unmodified buffer of a removed file.
---@param turn gemini_companion.Turn
---@param path string relative to the work tree
---@param expect gemini_companion.Version
---@param want gemini_companion.Version
---@param buf integer?
---@return boolean ok, string? error
local function put(turn, path, expect, want, buf)
  local params = { work_tree = turn.work_tree, path = path, expect = expect, want = want }
  local answer, err = host.request('changes_put', params)
  if type(answer) ~= 'table' or answer.error then
    return false, type(answer) == 'table' and answer.error or vim.split(tostring(err or '?'), '\n')[1]
  end
  if buf and want.kind == 'none' then
    pcall(vim.api.nvim_buf_delete, buf, { force = false })
  elseif buf then
    reload(buf)
  end
  return true
end

-- --- hunks ---------------------------------------------------------------------------------------

---@class gemini_companion.Hunk
---@field after_start integer first line in the turn's end version (count 0: insert after it)
---@field after_count integer
---@field before_start integer
---@field before_count integer
---@field now_start integer? where it lies now (nil: changed after the turn: not revertable)
---@field already boolean? taken back already (the lines now are the turn's start)

--- The turn's hunks (end version -> start version), each placed in the text as it is now.
---@param before string
---@param after string
---@param now string
---@return gemini_companion.Hunk[]
local function hunks(before, after, now)
  local norm = function(t) -- whole lines, as split() counts them ('' has none)
    return (t == '' or t:sub(-1) == '\n') and t or t .. '\n'
  end
  local turn = vim.diff(norm(after), norm(before), { result_type = 'indices' }) --[[@as integer[][] ]]
  local since = vim.diff(norm(after), norm(now), { result_type = 'indices' }) --[[@as integer[][] ]]
  local before_lines, now_lines = split(before), split(now)
  local out = {}
  for _, h in ipairs(turn) do
    local first, last = h[1], h[1] + math.max(h[2], 1) - 1
    local shift, clash, already = 0, false, false
    for _, s in ipairs(since) do
      local s_first, s_last = s[1], s[1] + math.max(s[2], 1) - 1
      if s_last < first or (s[2] == 0 and s[1] < first) then
        shift = shift + s[4] - s[2]
      elseif s_first <= last or (h[2] == 0 and s[1] == h[1]) then
        clash = true -- the user (or a later turn) changed these lines
        already = s[1] == h[1]
          and s[2] == h[2]
          and vim.deep_equal(
            vim.list_slice(now_lines, s[3], s[3] + s[4] - 1),
            vim.list_slice(before_lines, h[3], h[3] + h[4] - 1)
          )
      end
    end
    table.insert(out, {
      after_start = h[1],
      after_count = h[2],
      before_start = h[3],
      before_count = h[4],
      now_start = not clash and h[1] + shift or nil,
      already = already,
    })
  end
  return out
end

--- `now` with hunk `h` taken back to the turn's start.
---@param h gemini_companion.Hunk
---@param before_lines string[]
---@param now_lines string[]
---@return string[]
local function apply(h, before_lines, now_lines)
  local first0 = h.after_count == 0 and h.now_start or h.now_start - 1
  local out = vim.list_slice(now_lines, 1, first0)
  vim.list_extend(out, vim.list_slice(before_lines, h.before_start, h.before_start + h.before_count - 1))
  return vim.list_extend(out, vim.list_slice(now_lines, first0 + h.after_count + 1))
end

-- --- reverting ---------------------------------------------------------------------------------

---@class gemini_companion.RevertResult
---@field reverted integer hunks (or whole files) taken back
---@field already integer hunks (or whole files) that were back as before the turn already
---@field since true? the file is not as before the turn though: it holds later edits besides
---@field refused {filename: string, lnum: integer, text: string}[] one per hunk left alone

--- Take back the turn's change to `change.path`: every hunk, or only `only` (a hunk index).
---@param turn gemini_companion.Turn
---@param change gemini_companion.FileChange
---@param only? integer
---@param found? {before: gemini_companion.Version?, after: gemini_companion.Version?, err: string?} its versions, read already
---@return gemini_companion.RevertResult
local function revert_file(turn, change, only, found)
  local result = { reverted = 0, already = 0, refused = {} }
  local path = turn.work_tree .. '/' .. change.path
  found = found or versions_of(turn, { change.path })[change.path]
  local was, is, unread = found.before, found.after, found.err
  local kind, now, mode, buf = current(path)
  local function refuse(line, why)
    table.insert(result.refused, { filename = path, lnum = line, text = why })
    return result
  end
  if not (was and is) then
    return refuse(1, unread or '?')
  end
  -- A version the change list says exists but git no longer has: pruned (or the user's own
  -- `git gc`). Never read that as "the file did not exist".
  if (was.kind == 'none' and change.status ~= 'created') or (is.kind == 'none' and change.status ~= 'deleted') then
    return refuse(1, "the turn's snapshot is gone (pruned): left as it is")
  end
  local before, after = was.data, is.data
  -- As before the turn already (kind, bytes or target, execute bit; absent): nothing to take back.
  if kind == was.kind and now == before and (kind ~= 'file' or file_mode(mode) == was.mode) then
    result.already = 1
    return result
  end
  if buf and vim.bo[buf].modified then
    return refuse(1, 'has unsaved edits in Neovim: save or undo them first')
  end
  if kind ~= 'file' and kind ~= 'link' and kind ~= 'none' then
    return refuse(1, ('is a %s now: left as it is'):format(kind))
  end
  local untouched = kind == is.kind and now == after and (kind ~= 'file' or file_mode(mode) == is.mode)
  local text_only = was.kind == 'file' and is.kind == 'file' and not change.binary
  if untouched and (only == nil or not text_only) then -- the exact version back: bytes, type, mode
    local ok, err = put(turn, change.path, is, was, buf)
    if not ok then
      return refuse(1, err or 'cannot write')
    end
    result.reverted = 1
    return result
  elseif kind ~= is.kind and kind ~= 'none' then
    return refuse(1, ('is a %s now: left as it is'):format(kind))
  elseif not text_only or kind ~= 'file' then
    return refuse(1, 'changed after the turn: left as it is')
  end
  local before_lines, before_eol = split(before)
  local now_lines, now_eol = split(now)
  local list = hunks(before, after, now)
  -- Last hunk first: the earlier ones keep their place.
  for index = #list, 1, -1 do
    local h = list[index]
    if only == nil or only == index then
      if h.now_start then
        if h.now_start + math.max(h.after_count, 1) - 1 >= #now_lines then
          now_eol = before_eol -- the last line comes back as it was, final newline or not
        end
        now_lines = apply(h, before_lines, now_lines)
        result.reverted = result.reverted + 1
      elseif h.already then
        result.already = result.already + 1
        result.since = only == nil or nil -- its other lines may hold later edits
      else
        refuse(h.after_start, 'changed after the turn: left as it is')
      end
    end
  end
  -- The turn's own mode change goes back with the whole file, not a user's since.
  local mode_back = only == nil and was.mode ~= is.mode and file_mode(mode) == is.mode
  if only == nil and was.mode ~= is.mode and not mode_back then
    result.already, result.since = result.already + 1, true
  end
  if result.reverted > 0 or mode_back then
    local text = table.concat(now_lines, '\n') .. (now_eol and '\n' or '')
    local want = version(text, mode_back and was.mode or '')
    local ok, err = put(turn, change.path, version(now, ''), want, buf)
    result.reverted = result.reverted + (mode_back and 1 or 0)
    if not ok then
      result.reverted = 0
      return refuse(1, err or 'cannot write')
    end
  end
  return result
end

---@type gemini_companion.TypeChangeIO
local type_io = { versions_of = versions_of, loaded = loaded, reload = reload, batch = BATCH }

--- A name as one line of a message (a newline or a byte that is not UTF-8 shown as such).
---@param name string
---@return string
local function said(name)
  return vim.fn.strtrans(name)
end

---@param results gemini_companion.RevertResult[]
---@param what string the turn, the file or the hunk, as said
---@param back string why nothing is left, when every file (hunk) is as before the turn
local function report(results, what, back)
  local reverted, already, refused = 0, 0, {}
  for _, r in ipairs(results) do
    reverted, already = reverted + r.reverted, already + r.already
    back = r.since and 'what the turn changed is back; the rest was changed since' or back
    vim.list_extend(refused, r.refused)
  end
  if #refused == 0 and reverted == 0 and already > 0 then
    return message.notify(('%s: nothing left to take back (%s)'):format(what, back))
  end
  local counts = ('%d taken back%s'):format(reverted, already > 0 and (', %d already back'):format(already) or '')
  if #refused == 0 then
    return message.notify(('%s: %s'):format(what, counts))
  end
  -- The refused hunks as a new quickfix list (the changes list stays in the stack: :colder).
  vim.fn.setqflist({}, ' ', { title = ('Gemini changes: refused in %s'):format(what), items = refused })
  local first = refused[1]
  message.notify(
    ('%s: %s, %d refused (:copen lists them): %s:%d %s'):format(
      what,
      counts,
      #refused,
      said(vim.fn.fnamemodify(first.filename, ':.')),
      first.lnum,
      first.text
    ),
    'warn'
  )
end

-- --- the list and the diff --------------------------------------------------------------------

---@param spec? string a turn id, 'all', or nil (the last)
---@return gemini_companion.Turn? turn, string? error
local function pick(spec)
  if #M.turns == 0 then
    return nil, 'no turn has ended yet (an agent with hooks, or :GeminiChanges mark, starts one)'
  end
  if not spec or spec == '' then
    return M.turns[#M.turns]
  end
  for _, turn in ipairs(M.turns) do
    if tostring(turn.id) == spec then
      return turn
    end
  end
  return nil, ('no turn %s (kept: %d to %d)'):format(spec, M.turns[1].id, M.turns[#M.turns].id)
end

--- Fill the quickfix list with a turn's files; an entry opens the diff.
---@param turn gemini_companion.Turn?
---@param err? string
function M.show(turn, err)
  if not turn then
    return message.notify(err or 'nothing to show', 'warn')
  end
  shown[turn.id] = turn
  local items = {}
  for _, change in ipairs(turn.files) do
    local summary = change.binary and 'binary' or ('+%d -%d'):format(change.added, change.removed)
    table.insert(items, {
      filename = ('%s%d/%s'):format(SCHEME, turn.id, change.path),
      module = change.path,
      lnum = 1,
      text = ('%s %s (%s)'):format(change.status, summary, turn.agent),
    })
  end
  for _, path in ipairs(turn.skipped or {}) do
    local why = path:sub(-1) == '/' and 'a nested repository too big to copy: not tracked'
      or 'over the size limit: not tracked'
    table.insert(items, { module = path, text = why, type = 'W', valid = 0 })
  end
  local title = turn.id == 0 and ('Gemini changes: %s'):format(turn.agent)
    or ('Gemini changes: turn %d (%s)%s'):format(turn.id, turn.agent, turn.open and ', still going' or '')
  vim.fn.setqflist({}, ' ', { title = title, items = items, context = { gemini_changes = turn.id } })
  if #items == 0 then
    return message.notify(title .. ': no file changed')
  end
  vim.cmd('botright copen')
end

--- The `gemini-changes://<turn>/<path>` buffer: the file before the turn, read-only, with the
--- file as it is now beside it in diff mode.
---@param buf integer
function M.read(buf)
  local id, path = vim.api.nvim_buf_get_name(buf):sub(#SCHEME + 1):match('^(%d+)/(.+)$')
  local turn = shown[tonumber(id)]
  if not turn then
    return message.notify('this turn is no longer kept', 'error')
  end
  local before, _, err = versions(turn, path)
  if err then
    message.notify(('%s: %s'):format(said(path), err), 'warn')
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].swapfile = false
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, (split(before and before.data)))
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = vim.filetype.match({ filename = path }) or ''
  vim.b[buf].gemini_changes = { turn = turn.id, path = path }
  vim.keymap.set('n', 'dp', function()
    M.revert_hunk()
  end, { buffer = buf, desc = message.prefixed('take this hunk back (checked)') })
  vim.schedule(function()
    local win = vim.fn.bufwinid(buf)
    if win == -1 then
      return
    end
    vim.api.nvim_set_current_win(win)
    vim.cmd('diffthis')
    vim.wo[win].winbar = ('%%#DiffDelete# before turn %d (%s) %%* dp: take the hunk back · :GeminiChanges revert: the file'):format(
      turn.id,
      turn.agent
    )
    local file = turn.work_tree .. '/' .. path
    for _, other in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if vim.w[other].gemini_changes_now then -- the last entry's file: this one takes its place
        vim.api.nvim_win_call(other, function()
          vim.cmd('diffoff')
        end)
        vim.api.nvim_win_close(other, false)
      end
    end
    -- The file by its buffer, never through an Ex string: a name may hold a newline or `|`.
    vim.cmd('rightbelow vsplit')
    vim.api.nvim_win_set_buf(0, vim.fn.bufadd(file))
    vim.bo.buflisted = true
    vim.w.gemini_changes_now = true
    vim.cmd('diffthis')
    vim.cmd('wincmd p')
  end)
end

--- The hunk under the cursor in a `gemini-changes://` window, taken back.
function M.revert_hunk()
  local where = vim.b.gemini_changes
  local turn = where and shown[where.turn]
  if not turn then
    return message.notify('not in a changes window (open one from :GeminiChanges)', 'error')
  end
  local group = type_change.group(turn, where.path) -- its hunks are the whole path's type change
  if group then
    report({ type_change.revert(turn, group, type_io) }, said(group.root), 'it is as before the turn')
    return vim.cmd('diffupdate')
  end
  local change = vim.iter(turn.files):find(function(c)
    return c.path == where.path
  end)
  local found = versions_of(turn, { where.path })[where.path]
  local before, after, err = found.before, found.after, found.err
  local _, now = current(turn.work_tree .. '/' .. where.path)
  local line = vim.fn.line('.')
  local index = nil
  for i, h in ipairs(hunks(before and before.data or '', after and after.data or '', now or '')) do
    if line >= h.before_start and line <= h.before_start + math.max(h.before_count, 1) - 1 then
      index = i
    end
  end
  if not (before and after) then
    return message.notify(('%s: %s'):format(said(where.path), err or '?'), 'warn')
  elseif not change or not index then
    return message.notify('no change of the turn at this line', 'warn')
  end
  report({ revert_file(turn, change, index, found) }, said(where.path), 'the hunk is as before the turn')
  vim.cmd('diffupdate')
end

vim.api.nvim_create_autocmd('BufReadCmd', {
  group = vim.api.nvim_create_augroup('gemini_companion_changes', { clear = true }),
  pattern = SCHEME .. '*',
  callback = function(ev)
    M.read(ev.buf)
  end,
})

--- `:GeminiChanges [turn|all|mark|revert [file]|undo [turn]]`
---@param args string[]
function M.command(args)
  local verb = args[1]
  if verb == 'mark' then
    host.notify('changes_mark', { cwd = vim.fn.getcwd(), reason = 'mark' })
    return message.brief('changes: a new turn starts here')
  elseif verb == 'all' then
    return host.notify('changes_span', { first = 0 })
  elseif verb == 'undo' then
    local turn, err = pick(args[2])
    if not turn then
      return message.notify(err or '?', 'error')
    end
    local plain, groups = type_change.split(turn.files)
    local results = vim.tbl_map(function(group)
      return type_change.revert(turn, group, type_io)
    end, groups)
    for first = 1, #plain, BATCH do
      local batch = vim.list_slice(plain, first, first + BATCH - 1)
      local found = versions_of(
        turn,
        vim.tbl_map(function(change)
          return change.path
        end, batch)
      )
      for _, change in ipairs(batch) do
        table.insert(results, revert_file(turn, change, nil, found[change.path]))
      end
    end
    return report(results, ('turn %d (%s)'):format(turn.id, turn.agent), 'every file is as before the turn')
  elseif verb == 'revert' then
    if #args > 2 then
      return message.notify('revert takes one file (a space in its name: put a \\ before it)', 'error')
    end
    local where = vim.b.gemini_changes
    local turn = where and shown[where.turn] or pick()
    local name = args[2]
    -- A name is data: taken as typed (no `~`, `%`, `#` or `$VAR` expanded), from the current folder.
    local target = name and (name:sub(1, 1) == '/' and name or vim.fn.getcwd() .. '/' .. name)
      or (where and turn and turn.work_tree .. '/' .. where.path)
      or vim.api.nvim_buf_get_name(0)
    -- The file itself, through links and `..` (its folder's, when the file is gone).
    local parent, base = target:match('^(.*)/([^/]*)$')
    local real = vim.uv.fs_realpath(target)
    local in_real = parent and vim.uv.fs_realpath(parent == '' and '/' or parent)
    -- The name itself first: `y`, now a link to `x`, is `y`'s change; then the file it links to.
    for _, by_name in ipairs({ true, false }) do
      for _, change in ipairs(turn and turn.files or {}) do
        local file = turn.work_tree .. '/' .. change.path
        local named = file == target or (in_real and file == in_real .. '/' .. base)
        if (by_name and named) or (not by_name and file == real) then
          local group = type_change.group(turn, change.path) -- a path in a type change: all of it
          local result = group and type_change.revert(turn, group, type_io) or revert_file(turn, change)
          report({ result }, said(group and group.root or change.path), 'it is as before the turn')
          return pcall(vim.cmd.diffupdate)
        end
      end
    end
    return message.notify(('%s: not changed in the turn'):format(said(vim.fn.fnamemodify(target, ':~:.'))), 'warn')
  end
  local turn, err = pick(verb)
  M.show(turn, err)
end

return M
