--- The plugin's own Python host: a pynvim plugin host process that runs
--- rplugin/python3/gemini_companion, started by the plugin itself. It needs no manifest,
--- no :UpdateRemotePlugins and no g:python3_host_prog, and since the plugin owns the
--- process it notices its death at once (job exit) and can start a fresh one in the same
--- Neovim. Calls are msgpack-RPC on the job's channel; a notification sent while the
--- host is still starting waits in the pipe, so starting never blocks the UI.
local env = require('gemini_companion.env')
local message = require('gemini_companion.message')

local M = {}

M.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
--- The remote plugin's directory, as pynvim names its handlers ("<path>:function:<name>").
M.plugin = vim.fs.normalize(M.root .. '/rplugin/python3/gemini_companion')

-- Run as `python -S -c BOOT <plugin dir>`: boot.py advertises the server, then runs pynvim's
-- plugin host on the packages named on its command line. An empty sys.path entry (the cwd)
-- must not shadow anything. -S: boot.py loads `site` (site-packages, .pth files) itself, once
-- the discovery file is out.
local BOOT = "import sys; sys.path = [p for p in sys.path if p]; p = sys.argv[1] + '/programs/boot.py'; "
  .. "exec(compile(open(p).read(), p, 'exec'))"
local STDERR_LINES = 20

--- True once a host has been started (so it must be stopped on exit).
M.started = false

--- The running host's channel (nil: none).
---@type integer?
M.channel = nil

--- Why the host cannot run (nil while it can).
---@type string?
M.problem = nil

local stderr = {} ---@type string[]
local stopping = {} ---@type table<integer, boolean> channels we stop on purpose

--- The fix for a missing or broken venv, in one place.
---@return string
function M.install_hint()
  return ('run :GeminiCompanion install (or `make install` in %s)'):format(M.root)
end

--- The Python that runs the host: vim.g.gemini_companion_python, else the plugin's venv.
---@return string python, string how
function M.python()
  local explicit = vim.g.gemini_companion_python
  if type(explicit) == 'string' and explicit ~= '' then
    return vim.fn.expand(explicit), 'vim.g.gemini_companion_python'
  end
  return M.root .. '/.venv/bin/python', "the plugin's venv"
end

--- The host is gone or could not start: one line, once, and the state says why.
--- Quiet (at startup): the line waits for the first use, the first :terminal.
---@param why string
---@param quiet? boolean
local function fail(why, quiet)
  M.problem = why
  require('gemini_companion.state').fail(why)
  local served = package.loaded['gemini_companion.agents.served']
  if served and served.tells(why) then
    return nil, why
  end
  if not quiet then
    message.notify(why, 'error')
  else
    vim.api.nvim_create_autocmd('TermOpen', {
      group = vim.api.nvim_create_augroup('gemini_companion_first_use', { clear = true }),
      once = true,
      callback = function()
        if M.problem == why then
          message.notify(why, 'warn')
        end
      end,
    })
  end
  return nil, why
end

--- The last thing the host wrote to stderr that explains its exit.
---@return string?
local function last_error()
  for i = #stderr, 1, -1 do
    local line = vim.trim(stderr[i])
    if line ~= '' and not line:match('^%s*File ') and not line:match('^Traceback') then
      return line
    end
  end
end

---@param channel integer
---@param code integer
local function on_exit(channel, code)
  local expected = stopping[channel]
  stopping[channel] = nil
  if channel ~= M.channel then
    return -- an older host we replaced
  end
  M.channel = nil
  if expected or vim.v.exiting ~= vim.NIL then
    return
  end
  local why = last_error()
  local what = code > 128 and ('was killed (signal %d)'):format(code - 128) or ('exited (code %d)'):format(code)
  local hint = why and why:find('No module named', 1, true) and (': ' .. M.install_hint()) or ''
  fail(
    ('the Python host %s%s%s; :GeminiCompanion restart starts a new one'):format(
      what,
      why and (' — ' .. why) or '',
      hint
    )
  )
  -- Open proposals stay open, marked orphaned; nothing is shared with a dead server.
  if package.loaded['gemini_companion.review'] then
    require('gemini_companion.review').orphan_all('the Python host is gone')
  end
  if package.loaded['gemini_companion.context'] then
    require('gemini_companion.context').detach()
  end
end

--- Start a host process; returns its channel.
---@param start table the `start` parameters: the host advertises the server before it loads pynvim
---@param quiet? boolean
---@return integer? channel, string? error
local function spawn(start, quiet)
  local python, how = M.python()
  if vim.fn.executable(python) == 0 then
    if how == "the plugin's venv" then -- the build has not run: not an error the user made
      return fail(('not installed yet: %s'):format(M.install_hint()), quiet)
    end
    return fail(('the Python host %s does not exist: %s'):format(python, M.install_hint()), quiet)
  end
  stderr = {}
  local ok, channel = pcall(vim.fn.jobstart, { python, '-S', '-c', BOOT, M.plugin }, {
    rpc = true,
    env = {
      [env.start] = vim.json.encode(start),
      -- glibc: blocks over 128 KiB always mmap'd, so a closed 1 MB review gives its memory back
      -- (by default the threshold rises to the largest block freed, and the heap keeps it).
      [env.malloc_mmap_threshold] = '131072',
    },
    on_stderr = function(_, data)
      for _, line in ipairs(data) do
        if line ~= '' then
          table.insert(stderr, line)
          if #stderr > STDERR_LINES then
            table.remove(stderr, 1)
          end
        end
      end
    end,
    on_exit = function(job, code)
      vim.schedule(function()
        on_exit(job, code)
      end)
    end,
  })
  if not ok or channel <= 0 then
    return fail(('cannot start the Python host %s: %s'):format(python, ok and channel or tostring(channel)))
  end
  M.channel, M.started, M.problem = channel, true, nil
  require('gemini_companion.state').new_host()
  return channel
end

---@param sync boolean
---@param method string
---@param params? table
---@param quiet? boolean
---@return any result, string? error
local function call(sync, method, params, quiet)
  local channel = M.channel
  if not channel then
    if method ~= 'start' then -- only starting the server starts a host
      return nil, M.problem or 'the Python host is not running'
    end
    local err
    channel, err = spawn(params, quiet)
    if not channel then
      return nil, err
    end
  end
  local name = M.plugin .. ':function:' .. (sync and 'GeminiCompanionRequest' or 'GeminiCompanionNotify')
  local args = { { method, params or vim.empty_dict() } }
  local ok, result = pcall(sync and vim.rpcrequest or vim.rpcnotify, channel, name, unpack(args))
  if not ok then
    -- The host died under this call: its exit handler says why, once.
    return nil, tostring(result)
  end
  return result
end

--- Whether a host process is running.
---@return boolean
function M.alive()
  return M.channel ~= nil and vim.api.nvim_get_chan_info(M.channel).id ~= nil
end

--- Fire and forget: never waits for the host.
---@param method string
---@param params? table
---@param quiet? boolean say nothing if the host cannot start (the state still says why)
function M.notify(method, params, quiet)
  return call(false, method, params, quiet)
end

--- Waits for the host's answer. Only for calls that must finish first.
---@param method string
---@param params? table
---@param within_ms? integer a host that has not answered by then is ended (Neovim's exit must
--- never hang on a host stopped or stuck): the call then fails
function M.request(method, params, within_ms)
  if not M.alive() then
    return nil, M.problem or 'the Python host is not running'
  end
  local channel = M.channel --[[@as integer]]
  local pid = within_ms and vim.fn.jobpid(channel)
  local timer = pid and vim.uv.new_timer()
  if timer then
    -- A libuv callback: it runs while rpcrequest waits, where nothing else of ours can.
    timer:start(within_ms, 0, function()
      stopping[channel] = true
      vim.uv.kill(pid, 'sigkill')
    end)
  end
  local result, err = call(true, method, params)
  if timer then
    timer:stop()
    timer:close()
  end
  return result, err
end

--- End the host process (after `stop`): its exit is expected, not a failure.
function M.shutdown()
  local channel = M.channel
  if channel then
    stopping[channel] = true
    M.channel = nil
    vim.fn.jobstop(channel)
  end
end

local installing = false

--- Run the build (`make install` in the plugin directory) without blocking: each step is
--- shown as it starts, the outcome in one line. `done(true)` once the venv is ready.
---@param done fun(ok: boolean)
function M.install(done)
  if installing then
    return message.notify('the install is already running', 'warn')
  end
  local output = {} ---@type string[]
  local function collect(_, data)
    for line in vim.gsplit(data or '', '\n', { trimempty = true }) do
      table.insert(output, line)
      vim.schedule(function()
        message.echo('install: ' .. line)
      end)
    end
  end
  local ok, err = pcall(
    vim.system,
    { 'make', 'install' },
    { cwd = M.root, text = true, stdout = collect, stderr = collect },
    function(result)
      vim.schedule(function()
        installing = false
        if result.code ~= 0 then
          local last = output[#output] or ('make exited with code %d'):format(result.code)
          message.notify(('install failed: %s (make install in %s)'):format(last, M.root), 'error')
          return done(false)
        end
        M.problem = nil
        message.notify(('installed into %s/.venv'):format(M.root))
        done(true)
      end)
    end
  )
  if not ok then
    return message.notify(('cannot run make: %s'):format(err), 'error')
  end
  installing = true
  message.notify(('installing: make install in %s'):format(M.root))
end

return M
