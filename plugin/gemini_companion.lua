-- gemini-companion.nvim: commands and autocommands only; everything else loads on first use.
if vim.g.loaded_gemini_companion then
  return
end
vim.g.loaded_gemini_companion = true

if vim.fn.has('nvim-0.10') == 0 then
  vim.schedule(function()
    vim.notify('gemini-companion.nvim needs Neovim >= 0.10', vim.log.levels.ERROR)
  end)
  return
end

local function companion()
  return require('gemini_companion')
end

--- Completion: the words that start with what was typed.
---@param lead string
---@param words string[]
---@return string[]
local function starting_with(lead, words)
  return vim.tbl_filter(function(word)
    return vim.startswith(word, lead)
  end, words)
end

vim.api.nvim_create_user_command('GeminiCompanion', function(opts)
  companion().command(opts.fargs[1], opts.fargs[2])
end, {
  nargs = '*',
  desc = 'gemini-companion: start|stop|restart|status|install|enable-cli|disable-cli|conflict',
  complete = function(lead, line)
    local words = vim.split(line, '%s+', { trimempty = true })
    local candidates = #words > (lead == '' and 1 or 2) and { 'gemini', 'qwen' } or companion().subcommand_names()
    return starting_with(lead, candidates)
  end,
})
vim.api.nvim_create_user_command('GeminiCompanionStatus', function()
  companion().command('status')
end, { desc = 'gemini-companion: show server status' })
for name, verb in pairs({ GeminiAccept = 'accept', GeminiReject = 'reject' }) do
  vim.api.nvim_create_user_command(name, function(opts)
    require('gemini_companion.review')[verb](opts.args, opts.bang) -- the whole argument: a path may contain spaces
  end, {
    nargs = '?',
    bang = true,
    desc = ("gemini-companion: %s the proposed edit of [file] (default: this tab's or the only one), all [agent]"):format(
      verb
    ),
    complete = function(lead, line)
      return require('gemini_companion.review').complete(lead, line)
    end,
  })
end

local function agents()
  return require('gemini_companion.agents')
end

--- Configured agents and the running sessions of theirs (`gemini@2`).
local function agent_names()
  return require('gemini_companion.agents.instances').names()
end

-- `resume` and `sessions` are subcommands before they are agent names (:h gemini-companion-sessions).
local SESSION_VERBS = { resume = true, sessions = true }
vim.api.nvim_create_user_command('Gemini', function(opts)
  local verb = opts.fargs[1]
  if SESSION_VERBS[verb] then
    if #opts.fargs > 2 then
      return require('gemini_companion.message').notify((':Gemini %s [agent]: one agent at most'):format(verb), 'error')
    end
    return require('gemini_companion.agents.sessions')[verb](opts.fargs[2])
  end
  agents().toggle(verb, vim.list_slice(opts.fargs, 2))
end, {
  nargs = '*',
  desc = 'gemini-companion: toggle an agent ([agent] [args for its start]), [agent] new, resume [agent], sessions [agent]',
  complete = function(lead, line)
    local words = vim.split(line, '%s+', { trimempty = true })
    local index = #words - (lead == '' and 0 or 1) -- the word being completed, after the command
    if index == 1 then
      local names = vim.tbl_filter(function(name) -- an agent named like a subcommand is reached through it
        return not SESSION_VERBS[name]
      end, agent_names())
      return starting_with(lead, vim.list_extend({ 'resume', 'sessions' }, names))
    elseif index == 2 and SESSION_VERBS[words[2]] then
      return starting_with(lead, agent_names())
    end
    -- After an agent's name: another session of it.
    return (index == 2 and require('gemini_companion.config').options.agents[words[2]])
        and starting_with(lead, { 'new' })
      or {}
  end,
})
vim.api.nvim_create_user_command('GeminiSend', function(opts)
  require('gemini_companion.agents.commands').send(opts)
end, {
  nargs = '*',
  range = true,
  bang = true,
  complete = function(lead, line)
    local first = #vim.split(line, '%s+', { trimempty = true }) - (lead == '' and 0 or 1) == 1
    return first and starting_with(lead, agent_names()) or {}
  end,
  desc = 'gemini-companion: send the selection to an agent',
})
vim.api.nvim_create_user_command('GeminiChanges', function(opts)
  require('gemini_companion.changes').command(opts.fargs)
end, {
  nargs = '*',
  complete = function(lead)
    return starting_with(lead, vim.list_extend({ 'all', 'mark', 'revert', 'undo' }, agent_names()))
  end,
  desc = 'gemini-companion: what agents changed ([turn|agent], all, mark, revert [file], undo [turn|agent])',
})
vim.api.nvim_create_user_command('GeminiPrompt', function(opts)
  require('gemini_companion.agents.compose').open(opts)
end, {
  nargs = '?',
  range = true,
  complete = function(lead)
    return starting_with(lead, agent_names())
  end,
  desc = 'gemini-companion: write a prompt in a buffer (:w sends it)',
})
vim.api.nvim_create_user_command('GeminiAdd', function(opts)
  require('gemini_companion.agents.commands').add(opts)
end, {
  nargs = '*',
  range = true, -- the nodes of a file tree's lines
  complete = 'file',
  desc = "gemini-companion: add @file references (or a file tree's nodes: range, marks) to the prompt",
})

local group = vim.api.nvim_create_augroup('gemini_companion', { clear = true })
if vim.v.vim_did_enter == 1 then
  vim.schedule(function()
    companion().autostart()
  end)
else
  vim.api.nvim_create_autocmd('VimEnter', {
    group = group,
    once = true,
    -- Deferred: the host (a Python process) must not start inside startup itself.
    callback = function()
      vim.defer_fn(function()
        companion().autostart()
      end, 0)
    end,
  })
end
-- Only once the plugin is in use: before that there is nothing to stop or refresh.
for event, method in pairs({ VimLeavePre = 'stop', DirChanged = 'refresh_workspace' }) do
  vim.api.nvim_create_autocmd(event, {
    group = group,
    callback = function()
      if package.loaded['gemini_companion'] then
        companion()[method]()
      end
    end,
  })
end
-- Review buffers from a restored session (or a typed name) have no diff behind them.
vim.api.nvim_create_autocmd('BufReadCmd', {
  group = group,
  pattern = 'gemini://*',
  callback = function(ev)
    require('gemini_companion.review').read_stray(ev.buf)
  end,
})
vim.api.nvim_create_autocmd('SessionLoadPost', {
  group = group,
  callback = function()
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(buf):match('^gemini://') then
        vim.schedule(function() -- after the session script: its autocommand windows cannot close tabs
          require('gemini_companion.review').sweep_stray()
        end)
        return
      end
    end
  end,
})
