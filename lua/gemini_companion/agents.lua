--- Agents: Gemini CLI, Qwen Code (or any configured command) in Neovim terminals, one process
--- per name, shown and hidden without stopping it. Each starts with the server's environment
--- (and Qwen's IDE defaults, qwen_defaults.lua), so it comes up connected.
local config = require('gemini_companion.config')
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')

local M = {}

---@class gemini_companion.Agent
---@field name string
---@field buf integer The terminal buffer.
---@field job integer
---@field pid integer
---@field started number vim.uv.hrtime() at start.
---@field cli 'gemini'|'qwen'|nil Which CLI its command runs, when its package says so.
---@field version string The CLI's version from its package ('' when unknown).
---@field gemini_pid integer? Its own Gemini discovery file's number (access.py).
---@field qwen_port integer? Its own Qwen lock file's number.
---@field port integer? The server its files point to.

---@type table<string, gemini_companion.Agent>
local running = {}

local SUBMIT_DELAY_MS = 300
local READY_STILL_TICKS = 5 -- 500 ms without a change on screen
local READY_MAX_MS = 30000

--- The agent last opened, focused or sent to.
---@type string?
M.last = nil

local group = vim.api.nvim_create_augroup('gemini_companion_agents', { clear = true })

---@param pattern string
---@param data table
local function event(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

---@param name string
---@return gemini_companion.AgentSpec?
local function spec(name)
  return config.options.agents[name]
end

---@param value number
---@param whole integer
---@return integer
local function measure(value, whole)
  return math.max(1, math.floor(value < 1 and whole * value or value))
end

---@param agent gemini_companion.Agent
---@return integer[] windows showing the agent in the current tab
local function windows(agent)
  local tab = vim.api.nvim_get_current_tabpage()
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_tabpage(win) == tab
  end, vim.fn.win_findbuf(agent.buf))
end

--- Show `buf` the way the agent's window preset says; returns the new window (focused).
---@param name string
---@param buf integer
---@return integer
local function show(name, buf)
  local w = vim.tbl_extend('force', config.options.terminal.window, (spec(name) or {}).window or {})
  local win
  if w.position == 'float' then
    local width, height = measure(w.width, vim.o.columns), measure(w.height, vim.o.lines - 2)
    win = vim.api.nvim_open_win(buf, true, {
      relative = 'editor',
      width = width,
      height = height,
      row = math.floor((vim.o.lines - 2 - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = w.border,
      title = ' ' .. name .. ' ',
      title_pos = 'center',
    })
  elseif w.position == 'tab' then
    vim.cmd.tabnew()
    local empty = vim.api.nvim_get_current_buf()
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    if empty ~= buf and vim.api.nvim_buf_is_valid(empty) then
      pcall(vim.api.nvim_buf_delete, empty, {})
    end
  else
    local vertical = w.position == 'right' or w.position == 'left'
    local split = ({ right = 'right', left = 'left', bottom = 'below', top = 'above' })[w.position]
    win = vim.api.nvim_open_win(buf, true, {
      split = split,
      win = -1, -- beside the whole tab, not one window
      width = vertical and measure(w.size, vim.o.columns) or nil,
      height = not vertical and measure(w.size, vim.o.lines) or nil,
    })
    vim.wo[win][vertical and 'winfixwidth' or 'winfixheight'] = true
  end
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = 'no'
  vim.wo[win].winbar = ('%%#Title# %s %%* agent'):format(name)
  return win
end

---@param name string
local PACKAGES = { ['@google/gemini-cli'] = 'gemini', ['@qwen-code/qwen-code'] = 'qwen' }

--- Which CLI a command runs and its version, from its npm package (Qwen reports a fixed
--- "1.0.0" when it connects): `qwen`, or `node …/cli.js`. Nothing for a wrapper script.
---@param cmd string[]
---@return ('gemini'|'qwen')? cli, string version
local function cli_package(cmd)
  for _, word in ipairs({ cmd[1], cmd[2] }) do
    local found = vim.fn.exepath(word)
    local path = vim.uv.fs_realpath(found ~= '' and found or word)
    local dir = path and vim.fs.dirname(path)
    for _ = 1, 3 do -- bin/cli.js, or bundle/gemini.js, below the package
      if not dir then
        break
      end
      local package = require('gemini_companion.json_file').read(dir .. '/package.json') or {}
      if PACKAGES[package.name] then
        return PACKAGES[package.name], type(package.version) == 'string' and package.version or ''
      end
      dir = vim.fs.dirname(dir)
    end
  end
  return nil, ''
end

--- The agent's own discovery files and tokens (so the server knows which agent connects),
--- and the environment that names them; {} while no server runs.
---@param agent gemini_companion.Agent
---@return table<string, string>
local function credentials(agent)
  local status = require('gemini_companion.state').current
  if not (status.running or status.state == 'starting') then
    return {}
  end
  local got = host.request('agent_register', {
    name = agent.name,
    cli = agent.cli,
    version = agent.version,
    gemini_pid = agent.gemini_pid,
    qwen_port = agent.qwen_port,
  })
  if type(got) ~= 'table' or type(got.env) ~= 'table' then
    return {}
  end
  agent.gemini_pid, agent.qwen_port, agent.port = got.gemini_pid, got.qwen_port, status.port
  return got.env
end

---@param agent gemini_companion.Agent
---@param code integer
local function on_exit(name, agent, code)
  if running[name] ~= agent then
    return
  end
  running[name] = nil
  if agent.port then
    host.notify('agent_unregister', { name = name })
  end
  event('GeminiAgentExited', { agent = name, code = code })
  if config.options.terminal.close_on_exit and vim.api.nvim_buf_is_valid(agent.buf) then
    for _, win in ipairs(vim.fn.win_findbuf(agent.buf)) do
      if #vim.api.nvim_list_wins() > 1 then
        pcall(vim.api.nvim_win_close, win, true)
      end
    end
    pcall(vim.api.nvim_buf_delete, agent.buf, { force = true })
  end
end

-- Gemini CLI asks the terminal about itself as it starts and waits 1 s for the answers. When its
-- start stalls longer (a loaded machine), Neovim's answers reach its prompt as typed text,
-- ">|libvterm(0.3)1;2c". Nobody types that: while the agent starts, take it back with backspaces.
local STRAY_REPLY = '>|libvterm%([%d.]+%)[%d;]*c'
local STRAY_WATCH_MS, STRAY_TICK_MS = 30000, 200

---@param agent gemini_companion.Agent
local function take_back_stray_replies(agent)
  local timer = assert(vim.uv.new_timer())
  local function stop()
    if not timer:is_closing() then
      timer:stop()
      timer:close()
    end
  end
  timer:start(STRAY_TICK_MS, STRAY_TICK_MS, function()
    vim.schedule(function()
      local waited = (vim.uv.hrtime() - agent.started) / 1e6
      if timer:is_closing() or running[agent.name] ~= agent or waited > STRAY_WATCH_MS then
        return stop()
      end
      for _, line in ipairs(vim.api.nvim_buf_get_lines(agent.buf, 0, -1, false)) do
        local first, last = line:find(STRAY_REPLY)
        -- Only when it ends the input: after it, nothing but blanks and the prompt's border.
        if first and line:sub(last + 1):match('^[%s\226\148\130]*$') then
          vim.api.nvim_chan_send(agent.job, ('\127'):rep(last - first + 1))
          return stop()
        end
      end
    end)
  end)
end

---@param buf integer
local function map_back(buf)
  local key = config.options.terminal.back
  if key then
    vim.keymap.set('t', key, '<C-\\><C-n><C-w>p', { buffer = buf, desc = message.prefixed('back to the editor') })
  end
end

--- Start an agent in a new window (focused).
---@param name string
---@param args string[]
---@return gemini_companion.Agent? agent, string? error
local function start(name, args)
  local agent_spec = spec(name)
  if not agent_spec then
    return nil, ('no agent %q (agents: %s)'):format(name, table.concat(M.names(), ', '))
  end
  local cmd = vim.list_extend(vim.deepcopy(agent_spec.cmd), args)
  if vim.fn.executable(cmd[1]) == 0 then
    return nil, ('%s: %s is not on PATH'):format(name, cmd[1])
  end
  local cli_settings = require('gemini_companion.cli_settings')
  cli_settings.before_start(cli_settings.cli_of(name, cmd), config.options.cli_settings)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'hide'
  show(name, buf)
  local agent = { name = name, buf = buf, started = vim.uv.hrtime() }
  agent.cli, agent.version = cli_package(cmd)
  local options = {
    -- Added to Neovim's environment, which carries the server's.
    env = vim.tbl_extend('force', credentials(agent), agent_spec.env or {}),
    on_exit = function(_, code)
      vim.schedule(function()
        on_exit(name, agent, code)
      end)
    end,
  }
  local ok, job
  if vim.fn.has('nvim-0.11') == 1 then
    options.term = true
    ok, job = pcall(vim.fn.jobstart, cmd, options)
  else
    ok, job = pcall(vim.fn.termopen, cmd, options)
  end
  if not ok or job <= 0 then
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
    return nil, ('%s: cannot start %s: %s'):format(name, cmd[1], ok and job or tostring(job))
  end
  agent.job, agent.pid = job, vim.fn.jobpid(job)
  pcall(vim.api.nvim_buf_set_name, buf, ('gemini://agent/%s'):format(name))
  map_back(buf)
  running[name] = agent
  take_back_stray_replies(agent)
  event('GeminiAgentStarted', { agent = name, pid = agent.pid })
  return agent
end

---@param name? string
---@return string
local function resolve(name)
  return (name and name ~= '') and name or M.last or config.options.default_agent
end

--- Show and focus the agent (starting it with `args` if it does not run).
---@param name? string
---@param args? string[]
---@return gemini_companion.Agent?
function M.open(name, args)
  name = resolve(name)
  local agent = running[name]
  if not agent then
    local err
    agent, err = start(name, args or {})
    if not agent then
      message.notify(err or '?', 'error')
      return nil
    end
  else
    local wins = windows(agent)
    if #wins == 0 then
      show(name, agent.buf)
    else
      vim.api.nvim_set_current_win(wins[1])
    end
  end
  M.last = name
  vim.cmd.startinsert()
  return agent
end

--- Hide the agent's windows in this tab; the process keeps running.
---@param name? string
function M.hide(name)
  local agent = running[resolve(name)]
  if not agent then
    return
  end
  for _, win in ipairs(windows(agent)) do
    if #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(win, false)
    elseif vim.fn.tabpagenr('$') > 1 then
      vim.cmd.tabclose()
    end
  end
end

--- Hidden → shown and focused; shown but not focused → focused; focused → hidden.
---@param name? string
---@param args? string[]
function M.toggle(name, args)
  name = resolve(name)
  local agent = running[name]
  if agent and vim.api.nvim_get_current_buf() == agent.buf then
    M.hide(name)
  else
    M.open(name, args)
  end
end

--- Focus without toggling.
---@param name? string
function M.focus(name)
  M.open(name)
end

--- Stop one agent (or all): the process ends, its window closes.
---@param name? string
function M.stop(name)
  for agent_name, agent in pairs(running) do
    if not name or agent_name == name then
      vim.fn.jobstop(agent.job)
    end
  end
end

--- Running agents, for statuslines and scripts.
---@return {name: string, pid: integer, visible: boolean}[]
function M.list()
  local list = {}
  for name, agent in pairs(running) do
    table.insert(list, { name = name, pid = agent.pid, visible = #vim.fn.win_findbuf(agent.buf) > 0 })
  end
  table.sort(list, function(a, b)
    return a.name < b.name
  end)
  return list
end

--- Configured agent names (completion).
---@return string[]
function M.names()
  local names = vim.tbl_keys(config.options.agents)
  table.sort(names)
  return names
end

---@param name string
---@return gemini_companion.Agent?
function M.get(name)
  return running[name]
end

--- Run `fn` once the agent takes input: at once for one that has been running, else when its
--- screen has shown something and stayed still for a moment (bounded).
---@param agent gemini_companion.Agent
---@param fn fun()
local function when_ready(agent, fn)
  if (vim.uv.hrtime() - agent.started) / 1e6 > READY_MAX_MS then
    return fn()
  end
  local timer = assert(vim.uv.new_timer())
  local last_tick, still = -1, 0
  timer:start(100, 100, function()
    vim.schedule(function()
      if timer:is_closing() then
        return
      end
      local tick = vim.api.nvim_buf_is_valid(agent.buf) and vim.b[agent.buf].changedtick or -1
      local shown = tick >= 0 and vim.trim(table.concat(vim.api.nvim_buf_get_lines(agent.buf, 0, -1, false))) ~= ''
      still = (shown and tick == last_tick) and still + 1 or 0
      last_tick = tick
      local waited = (vim.uv.hrtime() - agent.started) / 1e6
      if still >= READY_STILL_TICKS or waited > READY_MAX_MS or running[agent.name] ~= agent then
        timer:stop()
        timer:close()
        if running[agent.name] == agent then
          fn()
        end
      end
    end)
  end)
end

--- Type `text` into the agent's prompt as a bracketed paste (never submits on its own), with the
--- agent shown and focused to go on typing; `submit`: then press Enter as a separate key, late
--- enough that the CLI takes it as submit.
---@param name? string
---@param text string
---@param submit? boolean
function M.send(name, text, submit)
  name = resolve(name)
  local agent = M.open(name)
  if not agent then
    return
  end
  M.last = name
  when_ready(agent, function()
    vim.api.nvim_chan_send(agent.job, '\27[200~' .. text .. '\27[201~')
    if submit then
      -- Gemini turns an Enter within ~40 ms of a paste into a newline (more under load).
      vim.defer_fn(function()
        if running[name] == agent then
          vim.api.nvim_chan_send(agent.job, '\r')
        end
      end, SUBMIT_DELAY_MS)
    end
  end)
end

--- Split a command's words into a configured agent name (first word, optional) and the rest.
---@param words string[]
---@return string?, string[]
local function agent_and_rest(words)
  if words[1] and spec(words[1]) then
    return words[1], vim.list_slice(words, 2)
  end
  return nil, words
end

--- `:[range]GeminiSend[!] [agent] [prompt]`
---@param opts table
function M.send_command(opts)
  local prompt = require('gemini_companion.prompt')
  local name, words = agent_and_rest(opts.fargs)
  local path = vim.api.nvim_buf_get_name(0)
  if path == '' then
    return message.notify('GeminiSend: this buffer has no file', 'error')
  end
  local lines, first, last = prompt.selection(opts)
  local text = prompt.snippet(path, first, last, lines, vim.bo.filetype, table.concat(words, ' '))
  M.send(name, text, opts.bang)
end

--- `:GeminiAdd [agent] [path...]`: @references, or the current file / the file tree's node.
---@param opts table
function M.add_command(opts)
  local prompt = require('gemini_companion.prompt')
  local name, paths = agent_and_rest(opts.fargs)
  if #paths == 0 then
    local current = prompt.current_path()
    if not current then
      return message.notify('GeminiAdd: no file here (give a path)', 'error')
    end
    paths = { current }
  end
  local refs = vim.tbl_map(function(path)
    return prompt.reference(vim.fn.expand(path))
  end, paths)
  M.send(name, table.concat(refs, ' ') .. ' ')
end

--- A new server (`:GeminiCompanion restart`, or the host came back): each agent's files now
--- point to it. The CLIs do not reconnect on their own: say what to type.
local function rewire()
  local status = require('gemini_companion.state').current
  if not status.running then
    return
  end
  local moved = {}
  for name, agent in pairs(running) do
    if agent.port and agent.port ~= status.port then
      credentials(agent)
      table.insert(moved, name)
    end
  end
  if #moved > 0 then
    table.sort(moved)
    message.notify(('new server: type /ide enable in %s to reconnect'):format(table.concat(moved, ', ')), 'warn')
  end
end

vim.api.nvim_create_autocmd('User', { group = group, pattern = 'GeminiStatusChanged', callback = rewire })

vim.api.nvim_create_autocmd('VimLeavePre', {
  group = group,
  callback = function()
    M.stop()
  end,
})

return M
