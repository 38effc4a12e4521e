--- `:[range]GeminiPrompt [agent]`: a buffer to write a prompt of many lines in. `:w` (or <C-s>)
--- sends it whole to the agent and submits it; placeholders (agents/placeholders.lua) are filled
--- from the window it was opened from (its range or Visual selection for `{selection}`).
--- <C-x><C-o> completes `@` files and `{` placeholders; in Normal mode <C-p> and <C-n> recall the
--- prompts sent before (agents/prompt_history.lua). The draft stays in its hidden buffer until sent.
local history = require('gemini_companion.agents.prompt_history')
local message = require('gemini_companion.message')
local placeholders = require('gemini_companion.agents.placeholders')
local prompt = require('gemini_companion.agents.prompt')

local M = {}

-- Lines of the window it opens in.
local HEIGHT = 10

---@class gemini_companion.Compose
---@field agent? string the agent named, else the one used last at the time of sending
---@field ctx gemini_companion.PromptContext where its placeholders are filled from
---@field recalled? integer the history entry shown (nil: the draft)
---@field draft? string[] the lines written before recalling

---@type table<integer, gemini_companion.Compose>
local composing = {}
local send, recall, buffer_of -- below the public functions

--- Open (or go back to) the prompt buffer of `opts.fargs[1]` (an agent), below the current window.
---@param opts table the user command's
function M.open(opts)
  local agent = opts.fargs[1]
  if agent and not require('gemini_companion.agents.instances').entry(agent) then
    return message.notify(('GeminiPrompt: no agent named %s'):format(prompt.text(agent, true)), 'error')
  end
  -- Opened again from a prompt buffer: its placeholders still speak of the window before it.
  local ctx = not composing[vim.api.nvim_get_current_buf()] and placeholders.context(opts) or nil
  local buf = buffer_of(agent)
  composing[buf] = vim.tbl_extend('force', composing[buf], { agent = agent, ctx = ctx })
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    win = vim.api.nvim_open_win(buf, true, { split = 'below', win = -1, height = HEIGHT })
  end
  vim.api.nvim_set_current_win(win)
  history.load(function() end) -- read now, for a recall later
end

--- The 'omnifunc' of a prompt buffer: `@` completes a file or folder (relative to the working
--- directory, escaped as both CLIs read it), `{` a placeholder.
---@param findstart integer
---@param base string
---@return integer|table
function M.complete(findstart, base)
  if findstart == 1 then
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local start = vim.api.nvim_get_current_line():sub(1, col):find('[@{][^%s@{]*$')
    return start and start - 1 or -3 -- -3: nothing to complete, quietly
  end
  if base:sub(1, 1) == '{' then
    return vim.tbl_filter(
      function(word)
        return vim.startswith(word, base)
      end,
      vim.tbl_map(function(name)
        return '{' .. name .. '}'
      end, placeholders.names())
    )
  end
  return vim.tbl_map(function(path)
    return { word = '@' .. prompt.escape(path), abbr = path }
  end, vim.fn.getcompletion(base:sub(2), 'file', true))
end

--- The prompt buffer of `agent` (one per agent name, and one for "the agent used last").
---@param agent? string
---@return integer
function buffer_of(agent)
  local name = 'gemini-prompt://' .. (agent or 'last')
  local buf = vim.fn.bufnr('^' .. vim.fn.escape(name, '\\^$.*~[]') .. '$')
  if buf ~= -1 and composing[buf] then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, false)
  vim.api.nvim_buf_set_name(buf, name)
  local bo = vim.bo[buf]
  bo.buftype, bo.bufhidden, bo.swapfile, bo.filetype = 'acwrite', 'hide', false, 'markdown'
  bo.omnifunc = "v:lua.require'gemini_companion.agents.compose'.complete"
  vim.api.nvim_create_autocmd('BufWriteCmd', {
    buffer = buf,
    callback = function()
      send(buf)
    end,
  })
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    callback = function()
      composing[buf] = nil
    end,
  })
  vim.keymap.set({ 'n', 'i' }, '<C-s>', '<Cmd>write<CR>', { buffer = buf, desc = 'GeminiPrompt: send' })
  vim.keymap.set('n', '<C-p>', function()
    recall(buf, -1)
  end, { buffer = buf, desc = 'GeminiPrompt: the prompt sent before' })
  vim.keymap.set('n', '<C-n>', function()
    recall(buf, 1)
  end, { buffer = buf, desc = 'GeminiPrompt: the prompt sent after' })
  composing[buf] = { ctx = placeholders.context() }
  return buf
end

--- Send the buffer's text whole (placeholders filled), submit it, keep it in the history, and
--- empty the buffer. Nothing to send, or a placeholder that cannot be filled: one line, kept.
---@param buf integer
function send(buf)
  local state = composing[buf]
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  while #lines > 0 and lines[#lines]:match('^%s*$') do
    table.remove(lines)
  end
  local text = table.concat(lines, '\n')
  if text:match('^%s*$') then
    return message.notify('GeminiPrompt: nothing to send', 'warn')
  end
  local filled, why = text, nil
  if placeholders.any(text) then
    filled, why = placeholders.expand(text, state.ctx)
  end
  if not filled then
    return message.notify('GeminiPrompt: ' .. why, 'error')
  end
  require('gemini_companion.agents').send(state.agent, filled, true)
  history.add(text)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  vim.bo[buf].modified = false
  state.recalled, state.draft = nil, nil
end

--- Show the history entry `step` away from the one shown (-1: older); past the newest, the draft.
---@param buf integer
---@param step integer
function recall(buf, step)
  history.load(function(entries)
    local state = composing[buf]
    if not state or not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    local at = (state.recalled or (#entries + 1)) + step
    if at < 1 or at > #entries + 1 then
      return -- nothing older (or newer)
    end
    if not state.recalled then
      state.draft = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    end
    state.recalled = at <= #entries and at or nil
    local lines = state.recalled and vim.split(entries[at], '\n', { plain = true }) or state.draft or {}
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end)
end

return M
