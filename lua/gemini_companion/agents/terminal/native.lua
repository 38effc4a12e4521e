--- The default provider: an agent in a Neovim terminal buffer, shown in a split, float or tab.
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')

local M = {}

--- The agent buffer's 'filetype' (for ftplugins and FileType autocommands).
M.FILETYPE = 'gemini_companion_agent'

--- `User GeminiAgentOpened`: the agent's window opened (it need not be the current one).
---@param agent gemini_companion.Agent
---@param win integer
local function opened(agent, win)
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiAgentOpened',
    modeline = false,
    data = { agent = agent.name, buf = agent.buf, win = win },
  })
end

---@param value number
---@param whole integer
---@return integer
local function measure(value, whole)
  return math.max(1, math.floor(value < 1 and whole * value or value))
end

---@param agent gemini_companion.Agent
---@return integer[] windows showing the agent in the current tab
function M.windows(agent)
  local tab = vim.api.nvim_get_current_tabpage()
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_tabpage(win) == tab
  end, vim.fn.win_findbuf(agent.buf))
end

---@param agent gemini_companion.Agent
---@return gemini_companion.WindowConfig
local function preset(agent)
  return vim.tbl_extend('force', config.options.terminal.window, agent.spec.window or {})
end

--- Show the agent's buffer the way its window preset says; returns the new window (focused
--- when `enter`).
---@param agent gemini_companion.Agent
---@param enter boolean (never false for a tab: opening one ends Visual mode)
---@return integer
local function show(agent, enter)
  local name, buf = agent.name, agent.buf
  local w = preset(agent)
  local win
  if w.position == 'float' then
    local width, height = measure(w.width, vim.o.columns), measure(w.height, vim.o.lines - 2)
    win = vim.api.nvim_open_win(buf, enter, {
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
    win = vim.api.nvim_open_win(buf, enter, {
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
  require('gemini_companion.agents.terminal.view').restore(agent, win)
  return win
end

-- Gemini CLI asks the terminal about itself as it starts and waits 1 s for the answers. When its
-- start stalls longer (a loaded machine), Neovim's answers reach its prompt as typed text,
-- ">|libvterm(0.3)1;2c". Nobody types that: while the agent starts, take it back with backspaces.
local STRAY_REPLY = '>|libvterm%([%d.]+%)[%d;]*c'
local STRAY_WATCH_MS, STRAY_TICK_MS = 30000, 200

---@param agent gemini_companion.Agent
local function take_back_stray_replies(agent)
  require('gemini_companion.poll').every(STRAY_TICK_MS, function()
    local waited = (vim.uv.hrtime() - agent.started) / 1e6
    if agent.exited or waited > STRAY_WATCH_MS then
      return true
    end
    for _, line in ipairs(vim.api.nvim_buf_get_lines(agent.buf, 0, -1, false)) do
      local first, last = line:find(STRAY_REPLY)
      -- Only when it ends the input: after it, nothing but blanks and the prompt's border.
      if first and line:sub(last + 1):match('^[%s\226\148\130]*$') then
        vim.api.nvim_chan_send(agent.job, ('\127'):rep(last - first + 1))
        return true
      end
    end
  end)
end

--- The agent's Terminal-mode keys (`terminal.back`, `terminal.keys`), each unless false.
---@param buf integer
local function map_keys(buf)
  local terminal = config.options.terminal
  local keys = {
    { terminal.back, '<C-\\><C-n><C-w>p', 'back to the editor' },
    { terminal.keys.window, '<C-\\><C-n><C-w>', 'a window command' },
    { terminal.keys.normal, '<C-\\><C-n>', 'Normal mode' },
  }
  for _, key in ipairs(keys) do
    if key[1] then
      vim.keymap.set('t', key[1], key[2], { buffer = buf, desc = message.prefixed(key[3]) })
    end
  end
end

--- Start the agent's process in a new terminal buffer, shown (and focused when `focus`; not
--- focused, an agent whose window is a tab starts hidden: `:Gemini` shows it).
---@param agent gemini_companion.Agent
---@param cmd string[]
---@param env table<string, string> Added to Neovim's environment (which carries the server's).
---@param on_exit fun(code: integer)
---@param focus boolean
---@return boolean ok, string? error
function M.start(agent, cmd, env, on_exit, focus)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'hide'
  agent.buf = buf
  local win = (focus or preset(agent).position ~= 'tab') and show(agent, focus) or nil
  local options = {
    env = env,
    on_exit = function(_, code)
      on_exit(code)
    end,
  }
  local ok, job
  local function run()
    if vim.fn.has('nvim-0.11') == 1 then
      options.term = true
      ok, job = pcall(vim.fn.jobstart, cmd, options)
    else
      ok, job = pcall(vim.fn.termopen, cmd, options)
    end
  end
  -- In the agent's window (the terminal takes its size), which need not be the current one.
  if win then
    vim.api.nvim_win_call(win, run)
  else
    vim.api.nvim_buf_call(buf, run)
  end
  if not ok or job <= 0 then
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
    return false, ok and tostring(job) or job
  end
  agent.job, agent.pid = job, vim.fn.jobpid(job)
  pcall(vim.api.nvim_buf_set_name, buf, ('gemini://agent/%s'):format(agent.name))
  map_keys(buf)
  require('gemini_companion.agents.terminal.view').watch(agent)
  require('gemini_companion.agents.terminal.paste').install(function(b)
    return vim.bo[b].filetype == M.FILETYPE
  end)
  vim.bo[buf].filetype = M.FILETYPE
  take_back_stray_replies(agent)
  if focus and config.options.terminal.auto_insert then
    vim.cmd.startinsert()
  end
  if win then
    opened(agent, win)
  end
  return true
end

--- Show (in this tab) and focus.
---@param agent gemini_companion.Agent
function M.open(agent)
  local wins = M.windows(agent)
  if #wins == 0 then
    opened(agent, show(agent, true))
  else
    vim.api.nvim_set_current_win(wins[1])
  end
  if config.options.terminal.auto_insert then
    vim.cmd.startinsert()
  end
end

---@param agent gemini_companion.Agent
---@return boolean
function M.focused(agent)
  return vim.api.nvim_get_current_buf() == agent.buf
end

---@param agent gemini_companion.Agent
---@return boolean
function M.visible(agent)
  return #vim.fn.win_findbuf(agent.buf) > 0
end

--- Hide the agent's windows in this tab.
---@param agent gemini_companion.Agent
function M.hide(agent)
  for _, win in ipairs(M.windows(agent)) do
    require('gemini_companion.agents.terminal.view').save(agent, win)
    if #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(win, false)
    elseif vim.fn.tabpagenr('$') > 1 then
      vim.cmd.tabclose()
    end
  end
end

--- A bracketed paste: lands in the prompt without submitting.
---@param agent gemini_companion.Agent
---@param text string
---@return boolean ok, string? error
function M.paste(agent, text)
  vim.api.nvim_chan_send(agent.job, require('gemini_companion.agents.prompt').bracketed(text))
  return true
end

---@param agent gemini_companion.Agent
function M.enter(agent)
  vim.api.nvim_chan_send(agent.job, '\r')
end

--- What the agent's screen shows (for waiting until it is ready).
---@param agent gemini_companion.Agent
---@return string
function M.screen(agent)
  return vim.api.nvim_buf_is_valid(agent.buf)
      and table.concat(vim.api.nvim_buf_get_lines(agent.buf, 0, -1, false), '\n')
    or ''
end

---@param agent gemini_companion.Agent
function M.stop(agent)
  vim.fn.jobstop(agent.job)
end

--- The process ended: close its window and buffer (when configured).
---@param agent gemini_companion.Agent
function M.exited(agent)
  if config.options.terminal.close_on_exit and vim.api.nvim_buf_is_valid(agent.buf) then
    for _, win in ipairs(vim.fn.win_findbuf(agent.buf)) do
      if #vim.api.nvim_list_wins() > 1 then
        pcall(vim.api.nvim_win_close, win, true)
      end
    end
    pcall(vim.api.nvim_buf_delete, agent.buf, { force = true })
  end
end

return M
