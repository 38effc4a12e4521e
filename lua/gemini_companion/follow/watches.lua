--- The folder watches of follow/init.lua: each followed file's folder watched (uv fs_event, one
--- handle per folder, bounded, released with its last buffer), and a link's target's folder too.
--- A change names the buffers of the file it is about (or all of the folder's) to follow/init.lua.

local M = {}

-- Folders watched at most (one inotify watch each); buffers beyond rely on the sweeps.
local MAX_FOLDERS = 256

---@type table<string, {handle: uv.uv_fs_event_t, names: table<string, table<integer, true>>}>
local folders = {}
local folder_count = 0
local followed ---@type table<integer, gemini_companion.Followed>
local on_change ---@type fun(bufs: integer[])
local on_watched ---@type fun(buf: integer, entry: gemini_companion.Followed)
local changed, watch_place -- below the public functions

--- Set what the watches look at and tell: the followed buffers, `changed` (the buffers of a
--- changed file, to read), `watched` (an entry's watches just set up).
---@param entries table<integer, gemini_companion.Followed>
---@param changed_bufs fun(bufs: integer[])
---@param watched fun(buf: integer, entry: gemini_companion.Followed)
function M.setup(entries, changed_bufs, watched)
  followed, on_change, on_watched = entries, changed_bufs, watched
end

--- How many folders are watched.
---@return integer
function M.count()
  return folder_count
end

--- Watch the folder of `entry`'s file, and when its name is a link, the target's folder too (a
--- change of the target, and the link itself replaced, are both seen); resolved off the main
--- loop. Nothing where a folder cannot be watched (missing, too many): the sweeps cover it.
---@param buf integer
---@param entry gemini_companion.Followed
function M.watch(buf, entry)
  local own, target, left = nil, nil, 2
  local function looked()
    left = left - 1
    if left > 0 then
      return
    end
    vim.schedule(function()
      if followed[buf] ~= entry or entry.watches then
        return
      end
      entry.watches = {}
      local places = { own, target ~= own and target or nil }
      for _, real in pairs(places) do
        local folder, base = vim.fs.dirname(real), vim.fs.basename(real)
        if watch_place(buf, folder, base) then
          table.insert(entry.watches, { folder = folder, base = base })
        end
      end
      on_watched(buf, entry) -- (what changed while the watch was being set up)
    end)
  end
  -- The name's own place: its folder resolved, the name Neovim reads in it (a new file, a link).
  vim.uv.fs_realpath(vim.fs.dirname(entry.name), function(_, dir)
    own = dir and dir .. '/' .. vim.fs.basename(entry.name)
    looked()
  end)
  vim.uv.fs_realpath(entry.name, function(_, real)
    target = real
    looked()
  end)
end

--- `buf` no longer wants `base` in `folder`; the folder's watch goes with its last name.
---@param buf integer
---@param folder string
---@param base string
function M.unwatch(buf, folder, base)
  local watched = folders[folder]
  local bufs = watched and watched.names[base]
  if not bufs then
    return
  end
  bufs[buf] = nil
  if next(bufs) == nil then
    watched.names[base] = nil
  end
  if next(watched.names) == nil then
    watched.handle:close()
    folders[folder] = nil
    folder_count = folder_count - 1
  end
end

--- A change in `folder`: the buffers of its file `name` (nil: of any of them) are told.
---@param folder string
---@param name string?
function changed(folder, name)
  local watched = folders[folder]
  if not watched then
    return
  end
  local bufs = {}
  for base, names in pairs(watched.names) do
    if name == nil or base == name then
      for buf in pairs(names) do
        bufs[#bufs + 1] = buf
      end
    end
  end
  on_change(bufs)
end

--- Watch `folder` for `base`, on behalf of `buf` (one handle per folder); whether it is watched.
---@param buf integer
---@param folder string
---@param base string
---@return boolean
function watch_place(buf, folder, base)
  local watched = folders[folder]
  if not watched then
    local handle = folder_count < MAX_FOLDERS and vim.uv.new_fs_event()
    if not handle then
      return false
    end
    local ok = handle:start(folder, {}, function(err, filename)
      changed(folder, not err and filename or nil)
    end)
    if not ok then
      handle:close()
      return false
    end
    watched = { handle = handle, names = {} }
    folders[folder] = watched
    folder_count = folder_count + 1
  end
  watched.names[base] = watched.names[base] or {}
  watched.names[base][buf] = true
  return true
end

return M
