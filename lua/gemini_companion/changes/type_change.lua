--- A path whose type a turn changed, taken back whole: a file or a symlink that became a folder
--- (the agent deleted `f` and made `f/` with files in it), a folder that became a file or a
--- symlink. The turn's list holds the path itself and each file under it; `undo`, or a revert of
--- any of them, gives the path back as it was (type, bytes, execute bit) all or nothing, and only
--- while what stands there is what the turn left: changes_put checks that on disk
--- (type_change.py) and names what is in the way. Loaded buffers of its files are treated as a
--- file revert treats its own: one with unsaved edits refuses, the others are reloaded (`u` takes
--- it back) or, their file gone, deleted.
local host = require('gemini_companion.host')

local M = {}

--- What changes/init.lua lends: its readers and buffer helpers.
---@class gemini_companion.TypeChangeIO
---@field versions_of fun(turn: gemini_companion.Turn, paths: string[], folders: boolean?): table
---@field loaded fun(path: string): integer?
---@field reload fun(buf: integer)
---@field batch integer

--- A turn's files split: those taken back one by one, and each type change with its files (the
--- path itself among them). A type change is a listed path with listed paths below it: it was a
--- file (or link) on one side of the turn and a folder on the other.
---@param files gemini_companion.FileChange[]
---@return gemini_companion.FileChange[] plain, {root: string, members: gemini_companion.FileChange[]}[] groups
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
---@return {root: string, members: gemini_companion.FileChange[]}?
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
---@param group {root: string, members: gemini_companion.FileChange[]}
---@param io gemini_companion.TypeChangeIO
---@return gemini_companion.RevertResult
function M.revert(turn, group, io)
  local root, members = group.root, group.members
  local result = { reverted = 0, already = 0, refused = {} }
  local function refuse(path, why)
    table.insert(result.refused, { filename = turn.work_tree .. '/' .. path, lnum = 1, text = why })
    return result
  end
  local found = {}
  for first = 1, #members, io.batch do
    local paths = vim.tbl_map(function(change)
      return change.path
    end, vim.list_slice(members, first, first + io.batch - 1))
    found = vim.tbl_extend('force', found, io.versions_of(turn, paths, true))
  end
  -- Each side as changes_put takes it: the path's own file or link, or a folder of the files under it.
  local sides = { { kind = 'folder', files = {} }, { kind = 'folder', files = {} } }
  for _, change in ipairs(members) do
    local f = found[change.path]
    if f.err then
      return refuse(change.path, f.err)
    end
    -- Listed, but git no longer has it: pruned. Never read as "absent".
    if
      (f.before.kind == 'none' and change.status ~= 'created')
      or (f.after.kind == 'none' and change.status ~= 'deleted')
    then
      return refuse(change.path, "the turn's snapshot is gone (pruned): left as it is")
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
    return refuse(root, "the turn's snapshot holds no file here: left as it is")
  end
  local bufs, unsaved = {}, nil
  for _, change in ipairs(members) do
    local buf = io.loaded(turn.work_tree .. '/' .. change.path)
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
  for path, buf in pairs(bufs) do
    local now = vim.uv.fs_lstat(turn.work_tree .. '/' .. path)
    if now and now.type ~= 'directory' then
      io.reload(buf)
    else
      pcall(vim.api.nvim_buf_delete, buf, { force = false })
    end
  end
  result.reverted = #members
  if answer.left then -- back, but some of what the turn left could not be deleted: where it is kept
    local why = ('taken back; what the turn left there is kept here (%s)'):format(answer.why)
    table.insert(result.refused, { filename = turn.work_tree .. '/' .. answer.left, lnum = 1, text = why })
  end
  return result
end

return M
