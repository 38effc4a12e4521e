--- The sweep of the Qwen system-defaults files (qwen_defaults.lua) that killed Neovims left: each
--- holds its server's token and is named by its Neovim's PID and start, so a file whose Neovim no
--- longer runs (a zombie, or a PID taken since) is removed by the next Neovim.
local M = {}

local swept = false
local alive, proc_stat -- defined below (helpers after the public functions)

--- Remove the files of Neovims that no longer run (a SIGKILL leaves them), once per Neovim: only
--- our regular files in our own folder, never through a link.
---@param dir string
function M.once(dir)
  if swept then
    return
  end
  swept = true
  local stat = vim.uv.fs_lstat(dir)
  if not (stat and stat.type == 'directory' and stat.uid == vim.uv.getuid()) then
    return
  end
  for name, kind in vim.fs.dir(dir) do
    local pid, start = name:match('^qwen%-system%-defaults%-(%d+)%-?(%d*)%.json$')
    pid = tonumber(pid)
    if kind == 'file' and pid and pid ~= vim.fn.getpid() and not alive(pid, start) then
      local path = dir .. '/' .. name
      local file = vim.uv.fs_lstat(path)
      if file and file.type == 'file' and file.uid == vim.uv.getuid() then
        vim.uv.fs_unlink(path)
      end
    end
  end
end

--- This process's (or another's) start, in clock ticks since boot (nil without procfs): with
--- the PID it names one process, not a later one that took the PID.
---@param pid integer
---@return string?
function M.start(pid)
  local _, start = proc_stat(pid)
  return start
end

--- A process's state letter and start (clock ticks since boot) from /proc; nil without procfs
--- (which reports size 0: files.read would read nothing; it never waits).
---@param pid integer
---@return string? state, string? start
function proc_stat(pid)
  local fd = vim.uv.fs_open(('/proc/%d/stat'):format(pid), 'r', 0)
  if not fd then
    return nil
  end
  local raw = vim.uv.fs_read(fd, 4096, 0) or ''
  vim.uv.fs_close(fd)
  local fields = vim.split(raw:match('^.*%) (.*)$') or '', ' ', { plain = true }) -- after the name
  return fields[1], fields[20]
end

--- Does the Neovim that wrote a file (its PID and start) still run? Like discovery.pid_alive: a
--- zombie does not, nor a process that took its PID since.
---@param pid integer
---@param start string? '' or nil: the writer's start is unknown (no procfs, an earlier name)
---@return boolean
function alive(pid, start)
  local ok, err = vim.uv.kill(pid, 0)
  if not ok and err and err:find('ESRCH', 1, true) then
    return false
  end
  local state, now = proc_stat(pid)
  if not state then
    return not vim.uv.fs_stat('/proc/self') -- gone in between, or no procfs: kill() is all we know
  end
  return not state:find('^[ZXx]') and (start == nil or start == '' or start == now)
end

return M
