--- A path whose type a turn changed, taken back whole: a file or a symlink that became a folder
--- (the agent deleted `f` and made `f/` with files in it), a folder that became a file or a
--- symlink. The turn's list holds the path itself and each file under it; `undo`, or a revert of
--- any of them, gives the path back as it was (type, bytes, execute bit) all or nothing, and only
--- while what stands there is what the turn left: changes_put checks that on disk
--- (type_change.py) and names what is in the way. Loaded buffers of its files are treated as a
--- file revert treats its own: one with unsaved edits refuses, the others are reloaded (`u` takes
--- it back) or, their file gone, deleted.
local buffers = require('gemini_companion.changes.buffers')
local git = require('gemini_companion.changes.git')
local host = require('gemini_companion.host')

local M = {}
local H = {}

---@alias gemini_companion.TypeChange {root: string, members: gemini_companion.FileChange[]}

--- A turn's files split: those taken back one by one, and each type change with its files (the
--- path itself among them). A type change is a listed path with listed paths below it: it was a
--- file (or link) on one side of the turn and a folder on the other.
---@param files gemini_companion.FileChange[]
---@return gemini_companion.FileChange[] plain, gemini_companion.TypeChange[] groups
function M.split(files)
  local roots = M.roots(files)
  local plain, groups, by_root = {}, {}, {}
  for _, change in ipairs(files) do
    local root = roots[change.path]
    if not root then
      table.insert(plain, change)
    else
      if not by_root[root] then
        by_root[root] = { root = root, members = {} }
        table.insert(groups, by_root[root])
      end
      table.insert(by_root[root].members, change)
    end
  end
  return plain, groups
end

--- Each path of a type change -> the path that changed type (the topmost listed one above it, or
--- itself); other paths are absent.
---@param files gemini_companion.FileChange[]
---@return table<string, string>
function M.roots(files)
  local listed, roots = {}, {}
  for _, change in ipairs(files) do
    listed[change.path] = true
  end
  for _, change in ipairs(files) do
    local slash = change.path:find('/', 1, true)
    while slash do -- the shortest first: the topmost
      local above = change.path:sub(1, slash - 1)
      if listed[above] then
        roots[change.path], roots[above] = above, above
        break
      end
      slash = change.path:find('/', slash + 1, true)
    end
  end
  return roots
end

--- The type change `path` belongs to in the turn, if any.
---@param turn gemini_companion.Turn
---@param path string
---@return gemini_companion.TypeChange?
function M.group(turn, path)
  local root = M.roots(turn.files)[path]
  if root then
    local _, groups = M.split(turn.files)
    return vim.iter(groups):find(function(g)
      return g.root == root
    end)
  end
end

--- Take back the type change `group`: all of it, or nothing.
---@param turn gemini_companion.Turn
---@param group gemini_companion.TypeChange
---@return gemini_companion.RevertResult
function M.revert(turn, group)
  local root, members = group.root, group.members
  local result = { reverted = 0, already = 0, refused = {} }
  local function refuse(path, why)
    table.insert(result.refused, { filename = turn.work_tree .. '/' .. path, lnum = 1, text = why })
    return result
  end
  local sides, path, why = H.sides(turn, group)
  if not sides then
    return refuse(path, why)
  end
  local bufs, unsaved = {}, nil
  for _, change in ipairs(members) do
    local buf = buffers.loaded(turn.work_tree .. '/' .. change.path)
    if buf then
      bufs[change.path] = buf
      unsaved = unsaved or (vim.bo[buf].modified and change.path or nil)
    end
  end
  local answer, err = host.request('changes_put', {
    work_tree = turn.work_tree,
    path = root,
    expect = sides[2],
    want = sides[1],
    unsaved = unsaved,
    ended = turn.ended, -- to tell a file made since from one the snapshot left out (ignored, too big)
  })
  if type(answer) ~= 'table' or answer.error then
    local about = type(answer) == 'table' and answer.path ~= '' and answer.path or root
    return refuse(about, type(answer) == 'table' and answer.error or vim.split(tostring(err or '?'), '\n')[1])
  elseif answer.already then
    result.already, result.since = #members, answer.since or nil -- files of yours added since stay
    return result
  end
  for file, buf in pairs(bufs) do
    local now = vim.uv.fs_lstat(turn.work_tree .. '/' .. file)
    buffers.refresh(buf, not now or now.type == 'directory')
  end
  result.reverted = #members
  if answer.left then -- back, but some of what the turn left could not be deleted: where it is kept
    refuse(answer.left, ('taken back; what the turn left there is kept here (%s)'):format(answer.why))
  end
  return result
end

-- Helpers ----------------------------------------------------------------------------------------

--- Each side of the type change as changes_put takes it: the path's own file or link, or a
--- folder of the files under it; or nil, the path it is about and why it cannot be read.
---@param turn gemini_companion.Turn
---@param group gemini_companion.TypeChange
---@return table[]? sides, string? path, string? why
function H.sides(turn, group)
  local root, members = group.root, group.members
  local found = {}
  for first = 1, #members, git.BATCH do
    local paths = vim.tbl_map(function(change)
      return change.path
    end, vim.list_slice(members, first, first + git.BATCH - 1))
    found = vim.tbl_extend('force', found, git.versions_of(turn, paths, true))
  end
  local sides = { { kind = 'folder', files = {} }, { kind = 'folder', files = {} } }
  for _, change in ipairs(members) do
    local f = found[change.path]
    if f.err then
      return nil, change.path, f.err
    end
    -- Listed, but git no longer has it: pruned. Never read as "absent".
    if
      (f.before.kind == 'none' and change.status ~= 'created')
      or (f.after.kind == 'none' and change.status ~= 'deleted')
    then
      return nil, change.path, "the turn's snapshot is gone (pruned): left as it is"
    end
    for i, v in ipairs({ f.before, f.after }) do
      if change.path == root and v.kind ~= 'folder' then
        sides[i] = v
      elseif change.path ~= root and v.kind ~= 'none' then
        local inside = { path = change.path:sub(#root + 2), kind = v.kind, data = v.data, mode = v.mode }
        table.insert(sides[i].files, inside)
      end
    end
  end
  if (sides[1].kind == 'folder') == (sides[2].kind == 'folder') then
    return nil, root, "the turn's snapshot holds no file here: left as it is"
  end
  return sides
end

return M
