--- The versions of a turn's files, read from its snapshot repository with git: ours (changes.py
--- made it, with its own config: no hook, no fsmonitor), never the user's, and no GIT_* variable
--- of Neovim's can send git elsewhere. `ls-tree` and `cat-file` print stored bytes: no filter or
--- textconv runs, and a name never enters git's line protocol.
local host = require('gemini_companion.host')

local M = {}
local H = {}

--- A version of a file in a tree, as changes_put takes it.
---@class gemini_companion.Version
---@field kind 'file'|'link'|'none'|'folder' a folder only when asked for (type_change.lua)
---@field data string? bytes, or a link's target
---@field mode string? git's mode: '100644', '100755', '120000'

--- A file's two versions, or why they cannot be read.
---@alias gemini_companion.Versions {before: gemini_companion.Version?, after: gemini_companion.Version?, err: string?}

-- Files whose versions are read together (three git runs; `undo` goes a batch at a time): few
-- runs, never every version of a huge turn in memory at once, arguments far below the kernel's
-- limits however long the names.
M.BATCH = 64

-- Git's modes of what a revert can put back: a file, an executable, a symlink.
local FILE_MODES = { ['100644'] = true, ['100755'] = true, ['120000'] = true }

local GONE = "the turn's snapshot is gone (pruned): left as it is"

--- The files in the turn's two trees (kind 'none' where absent), their bytes read by object id
--- in one `git cat-file --batch`. Three git runs for a batch of files (three runs per file held
--- Neovim 650 ms for a turn of 100). A path gets `err` instead when a tree or its blob is gone
--- (pruned: absent would say nothing) or its entry is not a file or a link (a folder's is kind
--- 'folder', without its files, when `folders`).
---@param turn gemini_companion.Turn
---@param paths string[] at most BATCH
---@param folders boolean?
---@return table<string, gemini_companion.Versions>
function M.versions_of(turn, paths, folders)
  local sides = {}
  for i, tree in ipairs({ turn.before, turn.after }) do
    local found, why = H.entries(turn, tree, paths)
    if not found then
      local each = {}
      for _, path in ipairs(paths) do
        -- git failed on the batch (a folder object gone, say): one by one, the others still read.
        each[path] = (#paths > 1 and not why) and M.versions_of(turn, { path }, folders)[path] or { err = why or GONE }
      end
      return each
    end
    sides[i] = found
  end
  local data, gone = H.blobs(turn, sides, paths)
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
      out[i] = folder and { kind = 'folder' } or M.version(e.oid and data[e.oid], e.mode or '')
    end
    result[path] = out.err and { err = out.err } or { before = out[1], after = out[2] }
  end
  return result
end

--- One file's two versions (see versions_of), a folder's as such.
---@param turn gemini_companion.Turn
---@param path string
---@return gemini_companion.Version? before, gemini_companion.Version? after, string? error
function M.versions(turn, path)
  local found = M.versions_of(turn, { path }, true)[path]
  return found.before, found.after, found.err
end

---@param data string?
---@param mode string
---@return gemini_companion.Version
function M.version(data, mode)
  return { kind = data == nil and 'none' or mode == '120000' and 'link' or 'file', data = data, mode = mode }
end

-- Helpers ----------------------------------------------------------------------------------------

--- `paths`' entries in `tree`: path -> git's mode and object id (a path the tree lacks is
--- absent), or nil and why when git cannot read the tree (pruned). Each path is a literal name
--- (no glob, no `:` magic) and the answer NUL-terminated: any name works, a newline included.
---@param turn gemini_companion.Turn
---@param tree string
---@param paths string[] at most BATCH
---@return table<string, {mode: string, oid: string}>? entries, string? why
function H.entries(turn, tree, paths)
  -- -t: a folder named beside a path inside it is still listed (else git only descends).
  local args = vim.list_extend({ '--literal-pathspecs', 'ls-tree', '-t', '-z', '--full-tree', tree, '--' }, paths)
  local done = H.git(turn, args, {})
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

--- The blobs of `paths`' files and links on both sides, by object id (only what was asked: a
--- folder's or a submodule's object never), and why one missing from it is missing.
---@param turn gemini_companion.Turn
---@param sides table<string, {mode: string, oid: string}>[]
---@param paths string[]
---@return table<string, string> data, string why
function H.blobs(turn, sides, paths)
  local ids = {}
  for _, path in ipairs(paths) do
    for i = 1, 2 do
      local e = sides[i][path]
      if e and FILE_MODES[e.mode] then
        ids[#ids + 1] = e.oid
      end
    end
  end
  local data = {}
  if #ids == 0 then
    return data, GONE
  end
  local done = H.git(turn, { 'cat-file', '--batch' }, { stdin = table.concat(ids, '\n') .. '\n' })
  -- Cut short (stopped, timed out): nothing of it is taken, the last record may be partial.
  local out = done.code == 0 and not done.why and done.stdout or ''
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
  return data, done.why or done.unread or GONE
end

--- git reading the turn's snapshot repository, bounded in time; the user's object store (the
--- alternate) only while its info/alternates cannot hold git (see H.unread). One line each: `why`
--- when git gave no answer, `unread` when the alternate was not read (the user's blobs are
--- missing then).
---@param turn gemini_companion.Turn
---@param args string[]
---@param opts {stdin?: string, text?: boolean}
---@return vim.SystemCompleted|{why: string?, unread: string?}
function H.git(turn, args, opts)
  local env = {}
  for key, value in pairs(vim.fn.environ()) do
    if not vim.startswith(key, 'GIT_') then
      env[key] = value
    end
  end
  local unread = turn.alternates ~= '' and H.unread(turn.alternates) or nil
  if turn.alternates ~= '' and not unread then
    env.GIT_ALTERNATE_OBJECT_DIRECTORIES = turn.alternates
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

--- Why the user's object store (`alternates`, C-quoted) is not to be read now, or nil: git would
--- open its info/alternates, and a FIFO there would hold Neovim. The host judges it, as it does
--- for its own snapshots (changes/git.py `unsafe_alternates`, the one place that knows the quoting).
---@param alternates string
---@return string?
function H.unread(alternates)
  local answer, err = host.request('changes_alternates', { alternates = alternates })
  if type(answer) ~= 'table' or type(answer.unsafe) ~= 'string' then
    local why = vim.split(tostring(err or '?'), '\n')[1]
    return ("the repository's objects are not read (%s): left as it is"):format(why)
  end
  return answer.unsafe ~= '' and ('%s: left as it is'):format(vim.fn.strtrans(answer.unsafe)) or nil
end

return M
