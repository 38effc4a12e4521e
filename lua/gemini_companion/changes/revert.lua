--- Checked reverts of a turn: a hunk, a file, the whole turn, and the one line (or the quickfix
--- list of refusals) that says what came back. A revert never overwrites what changed after the
--- turn (that hunk is refused and named) nor a buffer with unsaved edits; the host writes
--- (changes_put checks the file again as it writes); a loaded buffer is reloaded with its old text
--- in its undo history (`u`).
local buffers = require('gemini_companion.changes.buffers')
local files = require('gemini_companion.files')
local git = require('gemini_companion.changes.git')
local host = require('gemini_companion.host')
local hunks = require('gemini_companion.changes.hunks')
local message = require('gemini_companion.message')
local type_change = require('gemini_companion.changes.type_change')

local M = {}
local H = {}

---@class gemini_companion.RevertResult
---@field reverted integer hunks (or whole files) taken back
---@field already integer hunks (or whole files) that were back as before the turn already
---@field since true? the file is not as before the turn though: it holds later edits besides
---@field refused {filename: string, lnum: integer, text: string}[] one per hunk left alone

--- What a path is now, from disk (an unmodified buffer may be a stale view of it; a file whose
--- buffer has unsaved edits is refused before its text matters): its kind ('file', 'link',
--- 'none', or another type: a FIFO is never read), a file's bytes or a link's target, its mode
--- bits, and its loaded buffer. Only to decide and to diff: changes_put checks it again as it writes.
---@class gemini_companion.Now
---@field kind string
---@field data string?
---@field mode integer?
---@field buf integer?

--- `:GeminiChanges undo`: take back every file of the turn (each type change whole), and say so.
---@param turn gemini_companion.Turn
function M.turn(turn)
  local plain, groups = type_change.split(turn.files)
  local results = vim.tbl_map(function(group)
    return type_change.revert(turn, group)
  end, groups)
  for first = 1, #plain, git.BATCH do
    local batch = vim.list_slice(plain, first, first + git.BATCH - 1)
    local found = git.versions_of(
      turn,
      vim.tbl_map(function(change)
        return change.path
      end, batch)
    )
    for _, change in ipairs(batch) do
      table.insert(results, M.file(turn, change, nil, found[change.path]))
    end
  end
  H.report(results, ('turn %d (%s)'):format(turn.id, turn.agent), 'every file is as before the turn')
end

--- `:GeminiChanges revert {file}`: take back the turn's change to the file `target` names
--- (absolute), found through links and `..` (its folder's, when the file is gone); the name
--- itself first: `y`, now a link to `x`, is `y`'s change; then the file it links to.
---@param turn gemini_companion.Turn
---@param target string
---@return boolean found the turn changed it
function M.path(turn, target)
  local parent, base = target:match('^(.*)/([^/]*)$')
  local real = vim.uv.fs_realpath(target)
  local in_real = parent and vim.uv.fs_realpath(parent == '' and '/' or parent)
  for _, by_name in ipairs({ true, false }) do
    for _, change in ipairs(turn.files) do
      local file = turn.work_tree .. '/' .. change.path
      local named = file == target or (in_real and file == in_real .. '/' .. base)
      if (by_name and named) or (not by_name and file == real) then
        local group = type_change.group(turn, change.path) -- a path in a type change: all of it
        local result = group and type_change.revert(turn, group) or M.file(turn, change)
        H.report({ result }, H.said(group and group.root or change.path), 'it is as before the turn')
        return true
      end
    end
  end
  return false
end

--- The hunk of the turn's change to `path` at `line` of its "before the turn" version, taken back
--- (a path in a type change: all of it).
---@param turn gemini_companion.Turn
---@param path string relative to the work tree
---@param line integer
function M.hunk(turn, path, line)
  local group = type_change.group(turn, path) -- its hunks are the whole path's type change
  if group then
    return H.report({ type_change.revert(turn, group) }, H.said(group.root), 'it is as before the turn')
  end
  local change = vim.iter(turn.files):find(function(c)
    return c.path == path
  end)
  local found = git.versions_of(turn, { path })[path]
  local before, after = found.before, found.after
  local now = H.current(turn.work_tree .. '/' .. path).data
  local index = nil
  for i, h in ipairs(hunks.hunks(before and before.data or '', after and after.data or '', now or '')) do
    if line >= h.before_start and line <= h.before_start + math.max(h.before_count, 1) - 1 then
      index = i
    end
  end
  if not (before and after) then
    return message.notify(('%s: %s'):format(H.said(path), found.err or '?'), 'warn')
  elseif not change or not index then
    return message.notify('no change of the turn at this line', 'warn')
  end
  H.report({ M.file(turn, change, index, found) }, H.said(path), 'the hunk is as before the turn')
end

--- Take back the turn's change to `change.path`: every hunk, or only `only` (a hunk index); the
--- exact version back (bytes, type, mode) where the file is still what the turn left.
---@param turn gemini_companion.Turn
---@param change gemini_companion.FileChange
---@param only? integer
---@param found? gemini_companion.Versions its versions, read already
---@return gemini_companion.RevertResult
function M.file(turn, change, only, found)
  local result = { reverted = 0, already = 0, refused = {} }
  local path = turn.work_tree .. '/' .. change.path
  found = found or git.versions_of(turn, { change.path })[change.path]
  local now = H.current(path)
  local action, why = H.judge(change, found, now, only)
  if action == 'already' then
    result.already = 1
  elseif action == 'whole' then
    local ok, err = H.put(turn, change.path, found.after, found.before, now.buf)
    if not ok then
      return H.refuse(result, path, 1, err or 'cannot write')
    end
    result.reverted = 1
  elseif action == 'hunks' then
    H.by_hunks(turn, change, found, now, only, result)
  else
    H.refuse(result, path, 1, why)
  end
  return result
end

-- Helpers ----------------------------------------------------------------------------------------

--- What a revert of the file can do: nothing ('already' as before the turn), put the turn's start
--- back 'whole', go by 'hunks' (a text file changed since, or one hunk asked for), or 'refuse' and why.
---@param change gemini_companion.FileChange
---@param found gemini_companion.Versions
---@param now gemini_companion.Now
---@param only? integer
---@return 'already'|'whole'|'hunks'|'refuse' action, string? why
function H.judge(change, found, now, only)
  local was, is = found.before, found.after
  if not (was and is) then
    return 'refuse', found.err or '?'
  end
  -- A version the change list says exists but git no longer has: pruned (or the user's own
  -- `git gc`). Never read that as "the file did not exist".
  if (was.kind == 'none' and change.status ~= 'created') or (is.kind == 'none' and change.status ~= 'deleted') then
    return 'refuse', "the turn's snapshot is gone (pruned): left as it is"
  end
  local kind = now.kind
  -- As before the turn already (kind, bytes or target, execute bit; absent): nothing to take back.
  if kind == was.kind and now.data == was.data and (kind ~= 'file' or H.file_mode(now.mode) == was.mode) then
    return 'already'
  elseif now.buf and vim.bo[now.buf].modified then
    return 'refuse', 'has unsaved edits in Neovim: save or undo them first'
  elseif kind ~= 'file' and kind ~= 'link' and kind ~= 'none' then
    return 'refuse', ('is a %s now: left as it is'):format(kind)
  end
  local untouched = kind == is.kind and now.data == is.data and (kind ~= 'file' or H.file_mode(now.mode) == is.mode)
  local text_only = was.kind == 'file' and is.kind == 'file' and not change.binary
  if untouched and (only == nil or not text_only) then -- the exact version back: bytes, type, mode
    return 'whole'
  elseif kind ~= is.kind and kind ~= 'none' then
    return 'refuse', ('is a %s now: left as it is'):format(kind)
  elseif not text_only or kind ~= 'file' then
    return 'refuse', 'changed after the turn: left as it is'
  end
  return 'hunks'
end

--- A text file changed since the turn: each hunk (or `only`) whose lines are still what the turn
--- left taken back, the others refused, into `result`; then the file written once.
---@param turn gemini_companion.Turn
---@param change gemini_companion.FileChange
---@param found gemini_companion.Versions
---@param now gemini_companion.Now
---@param only? integer
---@param result gemini_companion.RevertResult
function H.by_hunks(turn, change, found, now, only, result)
  local path = turn.work_tree .. '/' .. change.path
  local was, is = found.before, found.after --[[@as gemini_companion.Version]]
  local before_lines, before_eol = hunks.split(was.data)
  local now_lines, now_eol = hunks.split(now.data)
  local list = hunks.hunks(was.data, is.data, now.data)
  -- Last hunk first: the earlier ones keep their place.
  for index = #list, 1, -1 do
    local h = list[index]
    if only == nil or only == index then
      if h.now_start then
        if h.now_start + math.max(h.after_count, 1) - 1 >= #now_lines then
          now_eol = before_eol -- the last line comes back as it was, final newline or not
        end
        now_lines = hunks.apply(h, before_lines, now_lines)
        result.reverted = result.reverted + 1
      elseif h.already then
        result.already = result.already + 1
        result.since = only == nil or nil -- its other lines may hold later edits
      else
        H.refuse(result, path, h.after_start, 'changed after the turn: left as it is')
      end
    end
  end
  -- The turn's own mode change goes back with the whole file, not a user's since.
  local mode_back = only == nil and was.mode ~= is.mode and H.file_mode(now.mode) == is.mode
  if only == nil and was.mode ~= is.mode and not mode_back then
    result.already, result.since = result.already + 1, true
  end
  if result.reverted > 0 or mode_back then
    local text = table.concat(now_lines, '\n') .. (now_eol and '\n' or '')
    local want = git.version(text, mode_back and was.mode or '')
    local ok, err = H.put(turn, change.path, git.version(now.data, ''), want, now.buf)
    result.reverted = result.reverted + (mode_back and 1 or 0)
    if not ok then
      result.reverted = 0
      H.refuse(result, path, 1, err or 'cannot write')
    end
  end
end

---@param path string absolute
---@return gemini_companion.Now
function H.current(path)
  local info = vim.uv.fs_lstat(path)
  local kind = info and info.type or 'none'
  local data = kind == 'file' and files.read(path) or kind == 'link' and vim.uv.fs_readlink(path) or nil
  if (kind == 'file' or kind == 'link') and not data then
    kind = kind .. ' that cannot be read' -- too large, or swapped for a FIFO since the lstat: refused
  end
  return { kind = kind, data = data, mode = info and info.mode, buf = buffers.loaded(path) }
end

---@param mode integer? lstat's mode
---@return string git's mode of a regular file with it
function H.file_mode(mode)
  return math.floor((mode or 0) / 64) % 2 == 1 and '100755' or '100644'
end

--- Make the file `want` if it is still `expect` (else refuse), in the host: it walks from the
--- work tree one folder at a time without following a symlink, so a folder an agent swaps for a
--- link mid-revert never sends a write or a delete outside. Exact bytes, link target and execute
--- bit; a file's other mode bits kept. Then its loaded buffer follows (buffers.refresh).
---@param turn gemini_companion.Turn
---@param path string relative to the work tree
---@param expect gemini_companion.Version
---@param want gemini_companion.Version
---@param buf integer?
---@return boolean ok, string? error
function H.put(turn, path, expect, want, buf)
  local params = { work_tree = turn.work_tree, path = path, expect = expect, want = want }
  local answer, err = host.request('changes_put', params)
  if type(answer) ~= 'table' or answer.error then
    return false, type(answer) == 'table' and answer.error or vim.split(tostring(err or '?'), '\n')[1]
  end
  if buf then
    buffers.refresh(buf, want.kind == 'none')
  end
  return true
end

---@param result gemini_companion.RevertResult
---@param path string absolute
---@param line integer
---@param why string
---@return gemini_companion.RevertResult
function H.refuse(result, path, line, why)
  table.insert(result.refused, { filename = path, lnum = line, text = why })
  return result
end

--- A name as one line of a message (a newline or a byte that is not UTF-8 shown as such).
---@param name string
---@return string
function H.said(name)
  return vim.fn.strtrans(name)
end

---@param results gemini_companion.RevertResult[]
---@param what string the turn, the file or the hunk, as said
---@param back string why nothing is left, when every file (hunk) is as before the turn
function H.report(results, what, back)
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
      H.said(vim.fn.fnamemodify(first.filename, ':.')),
      first.lnum,
      first.text
    ),
    'warn'
  )
end

return M
