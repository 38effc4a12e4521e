--- :checkhealth gemini_companion. Everything is checked live: the Python host is run on a
--- standalone probe (rplugin/python3/gemini_companion/programs/health_probe.py), the server state is
--- what the host last reported, and files and directories are looked at on disk.
local M = {}

local health = vim.health
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')

local PROBE_TIMEOUT_MS = 30000 -- generous: a loaded machine

--- The Python that runs the plugin's host.
---@return string? path, string how, string? error
local function python_host()
  local python, how = host.python()
  local path = vim.fn.exepath(python)
  return path ~= '' and path or python, how
end

---@class gemini_companion.HealthDir
---@field path string
---@field exists boolean
---@field problem string?
---@field mode string?
---@field owner string?

---@class gemini_companion.Probe
---@field python {executable: string, version: string}
---@field dependencies {name: string, version: string?, error: string?}[]
---@field tmpdir table<string, string?>
---@field directories {gemini: gemini_companion.HealthDir[], qwen: gemini_companion.HealthDir[]}

---@param python string
---@return gemini_companion.Probe? probe, string? error
local function run_probe(python)
  local script = host.plugin .. '/programs/health_probe.py'
  local ok, proc = pcall(vim.system, { python, script }, { text = true })
  if not ok then
    return nil, tostring(proc)
  end
  local result = proc:wait(PROBE_TIMEOUT_MS)
  if result.code ~= 0 then
    local detail = vim.trim(result.stderr or '')
    return nil, ('exit code %d%s'):format(result.code, detail ~= '' and (': ' .. detail) or '')
  end
  local decoded, probe = pcall(vim.json.decode, result.stdout or '', { luanil = { object = true } })
  if not decoded or type(probe) ~= 'table' then
    return nil, 'unreadable output: ' .. vim.trim(result.stdout or '')
  end
  return probe
end

local function check_neovim()
  health.start(message.prefixed('Neovim'))
  local v = vim.version()
  local text = ('Neovim %d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok(text)
  else
    health.error(text .. ': Neovim >= 0.10 is required')
  end
end

---@return gemini_companion.Probe?
local function check_python()
  health.start(message.prefixed('Python host'))
  local python, how, err = python_host()
  if not python then
    health.error('no Python host found: ' .. (err or '?'), { host.install_hint() })
    return nil
  end
  health.info(('Python host: %s (%s)'):format(python, how))
  local running = require('gemini_companion.state').current.python
  if running and vim.fn.resolve(running) ~= vim.fn.resolve(python) then
    health.info(('the running host uses %s'):format(running))
  end
  if vim.fn.executable(python) == 0 then
    health.error(python .. ' is not an executable program', {
      host.install_hint(),
      'or point vim.g.gemini_companion_python at a Python with the packages (:h gemini-companion-python)',
    })
    return nil
  end
  local probe, failure = run_probe(python)
  if not probe then
    health.error(('cannot run %s: %s'):format(python, failure), { host.install_hint() })
    return nil
  end
  local major, minor = probe.python.version:match('^(%d+)%.(%d+)')
  if vim.version.lt({ tonumber(major), tonumber(minor), 0 }, { 3, 10, 0 }) then
    health.error(('Python %s: Python >= 3.10 is required'):format(probe.python.version), { host.install_hint() })
  else
    health.ok(('Python %s'):format(probe.python.version))
  end
  for _, dep in ipairs(probe.dependencies) do
    if dep.error then
      local what = dep.version and ('%s %s cannot be imported (%s)'):format(dep.name, dep.version, dep.error)
        or ('%s is not installed'):format(dep.name)
      health.error(what, { host.install_hint() })
    else
      health.ok(('%s %s'):format(dep.name, dep.version or '(version unknown)'))
    end
  end
  return probe
end

local function check_host_process()
  health.start(message.prefixed('host process'))
  if host.alive() then
    health.ok(('running (pid %s, channel %d)'):format(vim.fn.jobpid(host.channel), host.channel))
  elseif host.problem then
    health.error(host.problem, { ':GeminiCompanion restart', host.install_hint() })
  else
    health.info('not started (it starts with the server: :GeminiCompanion start)')
  end
  local log = require('gemini_companion.log').settings()
  health.info(("its log: level '%s', %s (:GeminiCompanion log)"):format(log.level, log.path))
end

local function check_server()
  health.start(message.prefixed('server'))
  local s = require('gemini_companion.state').current
  if s.state == 'running' then
    health.ok(('running on 127.0.0.1:%s (IDE PID %s)'):format(s.port, s.pid))
  elseif s.state == 'starting' then
    health.warn(('starting on 127.0.0.1:%s: the server is still loading'):format(s.port or '?'))
  elseif s.state == 'failed' then
    health.error('failed: ' .. (s.error or 'unknown error'), { 'fix the cause, then :GeminiCompanion restart' })
  elseif require('gemini_companion.config').options.auto_start then
    health.warn('stopped', { ':GeminiCompanion start' })
  else
    health.info('stopped (auto_start is off): start it with :GeminiCompanion start')
  end
  if s.state ~= 'running' and s.state ~= 'starting' then
    return
  end
  health.info('workspace: ' .. (#s.workspace > 0 and table.concat(s.workspace, ', ') or '(none)'))
  local has_gemini = false
  for _, file in ipairs(s.discovery_files) do
    if vim.uv.fs_stat(file) then
      health.ok('discovery file ' .. file)
    else
      health.error('discovery file is gone: ' .. file, { ':GeminiCompanion restart' })
    end
    has_gemini = has_gemini or vim.fs.basename(file):match('^gemini%-ide%-server%-') ~= nil
  end
  if not has_gemini then
    health.error('no Gemini discovery file was written: the Gemini CLI cannot find this server', {
      'see the discovery directory errors below and :messages',
    })
  end
  if #s.clients == 0 then
    health.info('no clients connected (:Gemini starts one connected)')
  end
  for _, client in ipairs(s.clients) do
    health.info(('client %s (session %s)'):format(client.label or client.name, client.session))
  end
end

--- Each configured agent: can it start, where would it run, and (Gemini) will it connect.
local function check_agents()
  health.start(message.prefixed('agents (:Gemini)'))
  local options = require('gemini_companion.config').options
  local cli_settings = require('gemini_companion.agents.cli_settings')
  local names = vim.tbl_keys(options.agents)
  table.sort(names)
  for _, name in ipairs(names) do
    local agent = options.agents[name]
    local provider = agent.provider or options.terminal.provider
    local where = ('%s: %s (%s)'):format(name, table.concat(agent.cmd, ' '), provider)
    if vim.fn.executable(agent.cmd[1]) == 0 then
      health.warn(where .. ': not on PATH', { ('install it, or set agents.%s.cmd'):format(name) })
    elseif provider == 'tmux' and not vim.env.TMUX then
      health.warn(where .. ': Neovim is not running inside tmux', { "terminal.provider = 'native'" })
    elseif provider == 'external' and not ((agent.external or {}).cmd or options.terminal.external.cmd) then
      health.error(where .. ': terminal.external.cmd is not set', { "e.g. { 'kitty', '{cmd}' }" })
    else
      health.ok(where)
    end
  end
  local enabled = cli_settings.ide_enabled('gemini')
  local path = cli_settings.path('gemini')
  local _, unreadable = require('gemini_companion.json_file').text(path)
  if unreadable then
    health.error(('Gemini CLI: %s cannot be read (%s)'):format(path, unreadable), {
      'a regular file under 1 MiB: the plugin reads it and enable-cli edits it',
    })
  elseif enabled == true then
    health.ok(('Gemini CLI: IDE mode on in %s'):format(path))
  elseif enabled == false then
    health.warn(('Gemini CLI: you turned IDE mode off in %s (ide.enabled: false)'):format(path), {
      '/ide enable in the CLI, or :GeminiCompanion enable-cli gemini',
    })
  else
    health.info(
      ('Gemini CLI: IDE mode is not on in %s; the first :Gemini offers it (cli_settings = %q)'):format(
        path,
        options.cli_settings
      )
    )
  end
  health.ok('Qwen Code: IDE mode comes with the per-session defaults file (nothing written to its settings)')
  -- Where each running agent's state comes from (:h gemini-companion-attention).
  local agents = package.loaded['gemini_companion.agents'] -- none ran otherwise
  for _, item in ipairs(agents and agents.list() or {}) do
    local running = agents.get(item.name)
    local source = running and require('gemini_companion.agents.attention').source(running)
    local said = ('%s is %s; its state comes from '):format(item.name, item.state)
    if source == 'hooks' then
      health.ok(said .. 'its hooks' .. (running.cli == 'gemini' and ' (and its screen while it waits)' or ''))
    elseif source == 'screen' then
      health.info(said .. 'its screen: no hook of it heard (changes.enabled, cli_settings, a trusted folder)')
    else
      health.info(said .. 'nowhere yet: no hook of it heard, and an external terminal shows no screen')
    end
  end
end

---@param label string
---@param dirs gemini_companion.HealthDir[]
local function report_dirs(label, dirs)
  for _, dir in ipairs(dirs) do
    if dir.problem then
      health.error(('%s: %s'):format(label, dir.problem), {
        'remove it or fix it (a directory owned by you, mode 0700), then :GeminiCompanion restart',
      })
    elseif dir.exists then
      health.ok(('%s: %s (owner %s, mode %s)'):format(label, dir.path, dir.owner, dir.mode))
    else
      health.info(('%s: %s does not exist yet (created on start)'):format(label, dir.path))
    end
  end
end

---@param probe gemini_companion.Probe
local function check_directories(probe)
  health.start(message.prefixed('discovery directories'))
  local gemini = probe.directories.gemini
  local base = gemini[1]
  local source = probe.tmpdir.TMPDIR and 'TMPDIR' or probe.tmpdir.TMP and 'TMP' or probe.tmpdir.TEMP and 'TEMP'
  if source and not base.exists then
    health.error(('%s=%s points to a directory that does not exist'):format(source, probe.tmpdir[source]), {
      ('create it, or unset %s (the Gemini CLI then uses /tmp)'):format(source),
    })
  end
  health.info(('Gemini CLI looks in %s (Node os.tmpdir(): %s)'):format(gemini[3].path, source or 'default /tmp'))
  report_dirs('Gemini', gemini)
  report_dirs('Qwen Code', probe.directories.qwen)
end

local function check_env()
  health.start(message.prefixed('environment for :terminal'))
  local s = require('gemini_companion.state').current
  -- The keys are the server's (each snapshot carries all of them); none before a server ran.
  local keys = vim.tbl_keys(require('gemini_companion.state').env)
  table.sort(keys)
  if #keys == 0 then
    health.info('no server has run in this Neovim: terminals get no connection variables')
  end
  for _, key in ipairs(keys) do
    local value = vim.env[key]
    if key:match('TOKEN') then -- never show the token itself
      health.info(key .. ' is ' .. (value and 'set' or 'not set'))
    elseif value then
      health.info(('%s=%s'):format(key, value))
    else
      health.info(key .. ' is not set')
    end
  end
  if s.state == 'running' then
    local env = require('gemini_companion.env')
    if vim.env[env.gemini_port] == tostring(s.port) and vim.env[env.gemini_token] then
      health.ok('terminals opened from now on point at this server')
    else
      health.error('the environment does not match the running server', { ':GeminiCompanion restart' })
    end
  end
end

local function check_container()
  local in_container = vim.uv.fs_stat('/.dockerenv') or vim.uv.fs_stat('/run/.containerenv')
  if not in_container then
    return
  end
  health.start(message.prefixed('container'))
  if vim.env.SSH_CONNECTION or vim.env.REMOTE_CONTAINERS or vim.env.VSCODE_REMOTE_CONTAINERS_SESSION then
    health.ok('running in a container; the Gemini CLI will dial 127.0.0.1 (SSH_CONNECTION or REMOTE_CONTAINERS is set)')
  else
    health.info(
      'running in a container: the Gemini CLI dials host.docker.internal, fails, then uses the stdio bridge'
        .. ' named in the discovery file (nothing to do; see :h gemini-companion-containers)'
    )
  end
end

function M.check()
  check_neovim()
  local probe = check_python()
  check_host_process()
  check_server()
  check_agents()
  local clis = require('gemini_companion.health.clis')
  clis.check_tools()
  clis.check_changes()
  if probe then
    check_directories(probe)
  end
  check_env()
  check_container()
end

return M
