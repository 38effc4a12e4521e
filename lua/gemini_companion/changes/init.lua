--- What agents changed, turn by turn (the turns come from changes.py): `:GeminiChanges` lists a
--- turn's files in the quickfix list; an entry opens "before the turn" beside the file as it is
--- now, in diff mode; reverts go hunk by hunk, file by file or the whole turn. The public face:
--- the work is in changes/hooks.lua (the CLIs' hook entries), changes/git.lua (reading a turn's
--- versions), changes/hunks.lua, changes/revert.lua (checked reverts), changes/type_change.lua
--- and changes/view.lua (the list and the diff).
local hooks = require('gemini_companion.changes.hooks')
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')
local revert = require('gemini_companion.changes.revert')
local view = require('gemini_companion.changes.view')

local M = {}
local H = {}

---@class gemini_companion.FileChange
---@field path string relative to the turn's work tree
---@field status 'created'|'modified'|'deleted'
---@field added integer
---@field removed integer
---@field binary boolean
---@field also string[]? other agents that changed it in a turn at the same time (changes/overlap.py)

---@class gemini_companion.Turn
---@field id integer 0: a span of turns
---@field agent string
---@field boundary string
---@field git_dir string our snapshot repository (changes.py), never the user's
---@field alternates string GIT_ALTERNATE_OBJECT_DIRECTORIES to read its trees ('' for none)
---@field work_tree string
---@field before string tree at the turn's start
---@field after string tree at its end
---@field open boolean
---@field files gemini_companion.FileChange[]
---@field skipped string[]
---@field ended number? when it ended (os time, s); nil for a span
---@field again boolean? told again (changes/overlap.py): it replaces the turn kept, if still kept

M.hooks = hooks.hooks
M.off_outside_neovim = hooks.off_outside_neovim
M.hook_name = hooks.hook_name
M.ours = hooks.ours
M.show = view.show
M.read = view.read
M.revert_hunk = view.revert_hunk

--- Ended turns, oldest first (bounded: config changes.max_turns).
---@type gemini_companion.Turn[]
M.turns = {}

--- A turn ended (changes.py): remember it, tell the user and `User GeminiTurnEnded`. A turn told
--- again (another agent's turn at the same time changed some of its files too) replaces the one
--- kept, and is nothing once let go.
---@param turn gemini_companion.Turn
function M.turn_ended(turn)
  if turn.again then
    for i, kept in ipairs(M.turns) do
      if kept.id == turn.id then
        M.turns[i] = turn
        view.shown[turn.id] = turn
      end
    end
    return
  end
  table.insert(M.turns, turn)
  local max = require('gemini_companion.config').options.changes.max_turns
  while #M.turns > max do
    view.shown[table.remove(M.turns, 1).id] = nil -- its diff buffers say it is no longer kept
  end
  view.shown[turn.id] = turn
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiTurnEnded',
    modeline = false,
    data = { turn = turn.id, agent = turn.agent, files = turn.files },
  })
  if #turn.files > 0 then
    message.brief(
      ('%s changed %d file%s (:GeminiChanges)'):format(turn.agent, #turn.files, #turn.files == 1 and '' or 's')
    )
  end
end

--- `:GeminiChanges [turn|all|mark|revert [file]|undo [turn]]`
---@param args string[]
function M.command(args)
  local verb = args[1]
  if verb == 'mark' then
    host.notify('changes_mark', { cwd = vim.fn.getcwd(), reason = 'mark' })
    return message.brief('changes: a new turn starts here')
  elseif verb == 'all' then
    return host.notify('changes_span', { first = 0 })
  elseif verb == 'undo' then
    local turn, err = H.pick(args[2])
    if not turn then
      return message.notify(err or '?', 'error')
    end
    return revert.turn(turn)
  elseif verb == 'revert' then
    return H.revert(args)
  end
  M.show(H.pick(verb))
end

vim.api.nvim_create_autocmd('BufReadCmd', {
  group = vim.api.nvim_create_augroup('gemini_companion_changes', { clear = true }),
  pattern = view.SCHEME .. '*',
  callback = function(ev)
    view.read(ev.buf)
  end,
})

-- Helpers ----------------------------------------------------------------------------------------

---@param spec? string a turn id, an agent's name (its last turn: `gemini@2`'s own), or nil (the last)
---@return gemini_companion.Turn? turn, string? error
function H.pick(spec)
  if #M.turns == 0 then
    return nil, 'no turn has ended yet (an agent with hooks, or :GeminiChanges mark, starts one)'
  end
  if not spec or spec == '' then
    return M.turns[#M.turns]
  end
  for _, turn in ipairs(M.turns) do
    if tostring(turn.id) == spec then
      return turn
    end
  end
  for i = #M.turns, 1, -1 do
    if M.turns[i].agent == spec then
      return M.turns[i]
    end
  end
  return nil, ('no turn %s (kept: %d to %d)'):format(vim.fn.strtrans(spec), M.turns[1].id, M.turns[#M.turns].id)
end

--- `:GeminiChanges revert [file]`: the file named, or the one in the current window, in the turn
--- of the changes window (else the last).
---@param args string[]
function H.revert(args)
  if #args > 2 then
    return message.notify('revert takes one file (a space in its name: put a \\ before it)', 'error')
  end
  local where = vim.b.gemini_changes
  if where and not view.shown[where.turn] then -- never the last turn's change in its place
    return message.notify(view.gone(where.turn), 'error')
  end
  local turn = where and view.shown[where.turn] or H.pick()
  local name = args[2]
  -- A name is data: taken as typed (no `~`, `%`, `#` or `$VAR` expanded), from the current folder.
  local target = name and (name:sub(1, 1) == '/' and name or vim.fn.getcwd() .. '/' .. name)
    or (where and turn and turn.work_tree .. '/' .. where.path)
    or vim.api.nvim_buf_get_name(0)
  if turn and revert.path(turn, target) then
    return pcall(vim.cmd.diffupdate)
  end
  message.notify(('%s: not changed in the turn'):format(vim.fn.strtrans(vim.fn.fnamemodify(target, ':~:.'))), 'warn')
end

return M
