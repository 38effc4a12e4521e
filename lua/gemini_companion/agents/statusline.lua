--- The statusline string: each agent and its state, the open reviews, the files the last turn
--- changed, with highlight groups (`GeminiStatus*`). Rebuilt on the plugin's User events only, so
--- a redraw reads a cached string; each rebuild asks for the statuslines to be drawn again (nothing
--- else would until the user moves, or lualine's timer comes: ~0.5 s late on average).
local M = {}
local H = {}

local HIGHLIGHTS = {
  GeminiStatusStarting = 'Comment',
  GeminiStatusIdle = 'StatusLine',
  GeminiStatusWorking = 'DiagnosticInfo',
  GeminiStatusWaiting = 'DiagnosticWarn',
  GeminiStatusExited = 'Comment',
  GeminiStatusReviews = 'DiagnosticHint',
  GeminiStatusFiles = 'Comment',
}

local exited = {} ---@type table<string, true> agents whose process ended (shown until they start again)
local last_files = nil ---@type integer? files changed in the last ended turn
local cache = { line = '', plain = '' }

--- The cached string (`plain`: without highlight groups, for lualine and the like).
---@param opts? {plain?: boolean}
---@return string
function M.get(opts)
  return opts and opts.plain and cache.plain or cache.line
end

---@return table
function H.agents()
  return require('gemini_companion.agents')
end

--- The strings, from the running agents, the open reviews and the last turn.
function H.rebuild()
  local parts, plain = {}, {}
  local list = package.loaded['gemini_companion.agents'] and H.agents().list() or {}
  local names = {}
  for _, item in ipairs(list) do
    names[item.name] = true
  end
  for name in pairs(exited) do
    if not names[name] then
      table.insert(list, { name = name, state = 'exited' })
    end
  end
  table.sort(list, function(a, b)
    return a.name < b.name
  end)
  for _, item in ipairs(list) do
    local state = item.state or 'starting'
    local text = ('%s %s'):format(item.name, state)
    local group = 'GeminiStatus' .. state:sub(1, 1):upper() .. state:sub(2)
    table.insert(parts, ('%%#%s#%s%%*'):format(group, text:gsub('%%', '%%%%')))
    table.insert(plain, text)
  end
  local reviews = #(require('gemini_companion.state').current.diffs or {})
  if reviews > 0 then
    local text = ('%d review%s'):format(reviews, reviews == 1 and '' or 's')
    table.insert(parts, '%#GeminiStatusReviews#' .. text .. '%*')
    table.insert(plain, text)
  end
  if last_files and #list > 0 then
    local text = ('%d file%s'):format(last_files, last_files == 1 and '' or 's')
    table.insert(parts, '%#GeminiStatusFiles#' .. text .. '%*')
    table.insert(plain, text)
  end
  cache.line, cache.plain = table.concat(parts, ' · '), table.concat(plain, ' · ')
end

--- On an event: the new strings, shown. (Not as the module loads: that may be inside a
--- statusline's own evaluation.)
function H.update()
  H.rebuild()
  H.redraw()
end

--- Show the new string now: lualine (when it is loaded) evaluates its statusline, winbar and
--- tabline again (the component may be in any), on its own queue (one refresh within its
--- refresh_time, however many events); a plain 'statusline' is drawn again.
function H.redraw()
  local lualine = package.loaded['lualine']
  if type(lualine) == 'table' and type(lualine.refresh) == 'function' then
    pcall(lualine.refresh)
  else
    pcall(vim.cmd.redrawstatus, { bang = true })
  end
end

function H.highlights()
  for name, link in pairs(HIGHLIGHTS) do
    vim.api.nvim_set_hl(0, name, { link = link, default = true })
  end
end

--- The agent an event names, if it names one.
---@param ev table
---@return string?
function H.agent_of(ev)
  local data = type(ev.data) == 'table' and ev.data or {}
  return type(data.agent) == 'string' and data.agent or nil
end

H.highlights()

local group = vim.api.nvim_create_augroup('gemini_companion_statusline', { clear = true })
vim.api.nvim_create_autocmd('ColorScheme', { group = group, callback = H.highlights })
vim.api.nvim_create_autocmd('User', {
  group = group,
  pattern = { 'GeminiAgentStarted', 'GeminiAgentExited' },
  callback = function(ev)
    local name = H.agent_of(ev)
    if name then
      exited[name] = ev.match == 'GeminiAgentExited' or nil
    end
    H.update()
  end,
})
vim.api.nvim_create_autocmd('User', {
  group = group,
  pattern = 'GeminiTurnEnded',
  callback = function(ev)
    local files = type(ev.data) == 'table' and ev.data.files
    last_files = type(files) == 'table' and #files or 0
    H.update()
  end,
})
vim.api.nvim_create_autocmd('User', {
  group = group,
  pattern = { 'GeminiAgentState', 'GeminiDiffOpened', 'GeminiDiffClosed', 'GeminiStatusChanged' },
  callback = H.update,
})

H.rebuild()

return M
