--- What a turn changed, shown: its files in the quickfix list; an entry opens the
--- `gemini-changes://<turn>/<path>` buffer, the file before the turn (read-only), beside the file
--- as it is now, in diff mode, where `dp` takes the hunk under the cursor back.
local git = require('gemini_companion.changes.git')
local hunks = require('gemini_companion.changes.hunks')
local message = require('gemini_companion.message')
local revert = require('gemini_companion.changes.revert')

local M = {}
local H = {}

M.SCHEME = 'gemini-changes://'

---@type table<integer, gemini_companion.Turn> shown turns by id (spans too), for the diff buffers
M.shown = {}

--- Fill the quickfix list with a turn's files; an entry opens the diff.
---@param turn gemini_companion.Turn?
---@param err? string
function M.show(turn, err)
  if not turn then
    return message.notify(err or 'nothing to show', 'warn')
  end
  M.shown[turn.id] = turn
  local items = {}
  for _, change in ipairs(turn.files) do
    local summary = change.binary and 'binary' or ('+%d -%d'):format(change.added, change.removed)
    table.insert(items, {
      filename = ('%s%d/%s'):format(M.SCHEME, turn.id, change.path),
      module = change.path,
      lnum = 1,
      text = ('%s %s (%s%s)'):format(change.status, summary, turn.agent, H.also(change)),
    })
  end
  for _, path in ipairs(turn.skipped or {}) do
    local why = path:sub(-1) == '/' and 'a nested repository too big to copy: not tracked'
      or 'over the size limit: not tracked'
    table.insert(items, { module = path, text = why, type = 'W', valid = 0 })
  end
  local title = turn.id == 0 and ('Gemini changes: %s'):format(turn.agent)
    or ('Gemini changes: turn %d (%s)%s'):format(turn.id, turn.agent, turn.open and ', still going' or '')
  vim.fn.setqflist({}, ' ', { title = title, items = items, context = { gemini_changes = turn.id } })
  if #items == 0 then
    return message.notify(title .. ': no file changed')
  end
  vim.cmd('botright copen')
end

--- Why a diff buffer of turn `id` can do nothing now: Neovim let the turn go.
---@param id integer?
---@return string
function M.gone(id)
  return ('turn %s is no longer kept (changes.max_turns)'):format(id or '?')
end

--- What the list says of a file another agent changed too, in a turn at the same time.
---@param change gemini_companion.FileChange
---@return string
function H.also(change)
  local others = change.also or {}
  return #others > 0 and ('; also changed by %s at the same time'):format(table.concat(others, ', ')) or ''
end

--- The `gemini-changes://<turn>/<path>` buffer: the file before the turn, read-only, with the
--- file as it is now beside it in diff mode.
---@param buf integer
function M.read(buf)
  local id, path = vim.api.nvim_buf_get_name(buf):sub(#M.SCHEME + 1):match('^(%d+)/(.+)$')
  local turn = M.shown[tonumber(id)]
  if not turn then
    return message.notify(M.gone(tonumber(id)), 'error')
  end
  local before, _, err = git.versions(turn, path)
  if err then
    message.notify(('%s: %s'):format(vim.fn.strtrans(path), err), 'warn')
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].swapfile = false
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, (hunks.split(before and before.data)))
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = vim.filetype.match({ filename = path }) or ''
  vim.b[buf].gemini_changes = { turn = turn.id, path = path }
  vim.keymap.set('n', 'dp', function()
    M.revert_hunk()
  end, { buffer = buf, desc = message.prefixed('take this hunk back (checked)') })
  vim.schedule(function()
    H.beside(buf, turn, path)
  end)
end

--- The hunk under the cursor in a `gemini-changes://` window, taken back.
function M.revert_hunk()
  local where = vim.b.gemini_changes
  local turn = where and M.shown[where.turn]
  if not turn then
    return message.notify(
      where and M.gone(where.turn) or 'not in a changes window (open one from :GeminiChanges)',
      'error'
    )
  end
  revert.hunk(turn, where.path, vim.fn.line('.'))
  vim.cmd('diffupdate')
end

-- Helpers ----------------------------------------------------------------------------------------

--- The diff of the "before" buffer `buf` (in a window now) against the file as it is, opened
--- beside it, in place of the last entry's file.
---@param buf integer
---@param turn gemini_companion.Turn
---@param path string
function H.beside(buf, turn, path)
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    return
  end
  vim.api.nvim_set_current_win(win)
  vim.cmd('diffthis')
  vim.wo[win].winbar = ('%%#DiffDelete# before turn %d (%s) %%* dp: take the hunk back · :GeminiChanges revert: the file'):format(
    turn.id,
    turn.agent
  )
  local file = turn.work_tree .. '/' .. path
  for _, other in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.w[other].gemini_changes_now then -- the last entry's file: this one takes its place
      vim.api.nvim_win_call(other, function()
        vim.cmd('diffoff')
      end)
      vim.api.nvim_win_close(other, false)
    end
  end
  -- The file by its buffer, never through an Ex string: a name may hold a newline or `|`.
  vim.cmd('rightbelow vsplit')
  vim.api.nvim_win_set_buf(0, vim.fn.bufadd(file))
  vim.bo.buflisted = true
  vim.w.gemini_changes_now = true
  vim.cmd('diffthis')
  vim.cmd('wincmd p')
end

return M
