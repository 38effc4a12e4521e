--- Qwen Code's per-session system-defaults file: IDE mode on, nudge seen, and the model's
--- editor tools (tools/init.lua `servers`, with this server's URL and token) for every Qwen this
--- Neovim starts (managed agents and plain :terminal alike), without touching the user's
--- settings. Qwen reads the file named by its system-defaults variable at the lowest
--- precedence, so a user's own `ide.enabled: false` still wins. Ours replaces the file Qwen
--- would otherwise read, so that file's settings are merged in. Gemini CLI reads no such file
--- a normal user can write (it skips one whose folders up to / are not all root's and closed to
--- others: see `:h gemini-companion-agents`).
--- The variable names our file only while the server runs and the file holds what it offers (a
--- Qwen reads it once, as it starts: one started before would never get the tools); else what
--- Neovim started with. The file holds the server's token: one a killed Neovim left is swept
--- (qwen_defaults/sweep.lua).
local env = require('gemini_companion.env')
local json_file = require('gemini_companion.json_file')
local sweep = require('gemini_companion.agents.qwen_defaults.sweep')

local M = {}

local VAR = env.qwen_system_defaults
local IDE = { ide = { enabled = true, hasSeenNudge = true } }
local VERSION = 4 -- Qwen rewrites a file without "$version" (client-facts.md)

--- The file this Neovim wrote (nil: none).
---@type string?
M.path = nil

--- The tools endpoint the file names ('' for none), to rewrite it only when that changes.
local written_tools = ''

---@return string
local function tools_endpoint()
  local tools = require('gemini_companion.state').current.tools
  return tools and tools.url .. ' ' .. tools.headers.Authorization or ''
end

local inherited = vim.env[VAR] -- what Qwen would read without us, as Neovim started

---@return string
local function system_defaults()
  if inherited and inherited ~= '' then
    return inherited
  end
  local settings = vim.env[env.qwen_system_settings]
  if settings and settings ~= '' then
    return vim.fs.dirname(settings) .. '/system-defaults.json'
  end
  return '/etc/qwen-code/system-defaults.json'
end

---@return string our folder: per user and stable across Neovims (where the next one sweeps)
local function folder()
  local run = vim.fn.stdpath('run')
  if (vim.env.XDG_RUNTIME_DIR or '') == '' then
    -- Then stdpath('run') is this Neovim's own temporary folder, gone with it (but for a
    -- SIGKILL): its parent, Neovim's per-user folder, is the stable one.
    local parent = vim.fs.dirname(run)
    local stat = vim.uv.fs_lstat(parent)
    if stat and stat.type == 'directory' and stat.uid == vim.uv.getuid() and stat.mode % 64 == 0 then
      run = parent
    end
  end
  return run .. '/gemini-companion'
end

--- Terminals opened from now on see what Neovim started with; our file is removed.
local function withdraw()
  if M.path then
    vim.uv.fs_unlink(M.path)
    M.path = nil
  end
  written_tools = ''
  vim.env[VAR] = inherited
end

local active = false -- between ensure() and remove()

--- Write (atomically, 0600) the merged file, then point this Neovim's terminals at it.
---@return string? path, string? error
local function write()
  local merged = vim.tbl_deep_extend('force', json_file.read(system_defaults()) or {}, IDE)
  merged['$version'] = merged['$version'] or VERSION
  local tools = require('gemini_companion.state').current.tools
  local servers = tools and require('gemini_companion.tools').servers('qwen', tools.url, tools.headers.Authorization)
  for name, server in pairs(servers or {}) do -- Qwen replaces a same-name entry whole: so do we
    merged.mcpServers = type(merged.mcpServers) == 'table' and merged.mcpServers or {}
    merged.mcpServers[name] = server
  end
  local changes = require('gemini_companion.changes')
  -- Not an entry of ours the file already had (an outer Neovim's file, inherited by a Neovim in
  -- its terminal; an earlier version's): the hooks report once, and only as configured here.
  for event, list in pairs(type(merged.hooks) == 'table' and merged.hooks or {}) do
    if vim.islist(list) then
      merged.hooks[event] = vim.tbl_filter(function(item)
        return not changes.ours(item)
      end, list)
    end
  end
  for event, entry in pairs(changes.hooks('qwen') or {}) do
    merged.hooks = type(merged.hooks) == 'table' and merged.hooks or {}
    local list = type(merged.hooks[event]) == 'table' and merged.hooks[event] or {}
    merged.hooks[event] = vim.list_extend(vim.deepcopy(list), { entry }) -- after the system's own
  end
  local dir = folder()
  vim.fn.mkdir(dir, 'p', tonumber('700', 8))
  sweep.once(dir)
  local start = sweep.start(vim.fn.getpid())
  local path = ('%s/qwen-system-defaults-%d-%s.json'):format(dir, vim.fn.getpid(), start or '')
  local ok, err = require('gemini_companion.files').write(path, vim.json.encode(merged), tonumber('600', 8))
  if not ok then
    withdraw()
    return nil, err
  end
  M.path = path
  written_tools = tools_endpoint()
  vim.env[VAR] = path -- only now: complete
  return path
end

--- From now on, while the server runs: the file, and this Neovim's terminals pointed at it
--- (rewritten now: the configuration may have changed).
---@return string? path, string? error
function M.ensure()
  active = true
  if tools_endpoint() == '' then
    withdraw() -- no server yet: sync() writes it once the server is up
    return nil
  end
  return write()
end

--- After a status change: rewrite the file if the tools endpoint it names changed (the server
--- came up, restarted on another port); withdraw it when the server is gone.
function M.sync()
  if not active or tools_endpoint() == written_tools then
    return
  elseif tools_endpoint() == '' then
    withdraw()
  else
    write()
  end
end

--- Remove the file; terminals opened from now on see what Neovim started with.
function M.remove()
  active = false
  withdraw()
end

return M
