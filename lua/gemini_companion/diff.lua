--- The review tab for an agent's proposed edit: the file as it is (read-only) beside the
--- proposal (editable). `:w` in the proposal accepts it; closing it any other way rejects it.
--- The Python side owns the protocol and reads files; this side owns windows and buffers
--- and reports each diff's outcome once. Buffers are named and filled through the API only,
--- so nothing in a path is ever parsed as an Ex command.
local config = require('gemini_companion.config')
local host = require('gemini_companion.host')

local M = {}

---@class gemini_companion.Text A text as one string: splitting it here is faster than
--- receiving a list of many strings.
---@field text string The lines joined by `eol`, without the last line's ending.
---@field eol string '\n' or '\r\n'.
---@field final_newline boolean The last line ends with `eol` too.

---@class gemini_companion.DiffSpec What the Python side sends to open a diff.
---@field id integer
---@field path string Absolute, normalised path of the target file.
---@field proposal gemini_companion.Text
---@field original gemini_companion.Text The file as it is (empty for a new file).
---@field is_new boolean The file does not exist yet.
---@field first_change integer

---@class gemini_companion.Diff
---@field id integer
---@field path string
---@field eol string
---@field final_newline boolean
---@field original integer Buffer: the file as it is.
---@field proposal integer Buffer: the proposal.
---@field tab integer
---@field group integer Autocommand group of this diff.
---@field poll uv.uv_timer_t? Watches the file while the diff is open.
---@field return_win integer Where the user was when the diff opened.
---@field return_to_terminal boolean They were typing in a terminal.
---@field done boolean

---@type table<integer, gemini_companion.Diff>
local diffs = {}

local ERROR, WARN, INFO = vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO

---@param message string
---@param level integer
local function notify(message, level)
  vim.notify('gemini-companion: ' .. message, level)
end

---@param path string
---@return string
local function display(path)
  return vim.fn.fnamemodify(path, ':~:.')
end

--- Loaded buffers of the user's that show `path`.
---@param path string
---@return integer[]
local function file_buffers(path)
  local real = vim.uv.fs_realpath(path) or path
  local found = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and name ~= '' and (name == path or vim.uv.fs_realpath(name) == real) then
      table.insert(found, buf)
    end
  end
  return found
end

---@param path string
---@return integer?
local function modified_buffer(path)
  for _, buf in ipairs(file_buffers(path)) do
    if vim.bo[buf].modified then
      return buf
    end
  end
end

--- A winbar is a statusline format: '%' in a path must not be read as an item.
---@param text string
---@return string
local function bar(text)
  return (text:gsub('%%', '%%%%'))
end

---@param diff gemini_companion.Diff
---@return string
local function proposal_text(diff)
  local lines = vim.api.nvim_buf_get_lines(diff.proposal, 0, -1, false)
  return table.concat(lines, diff.eol) .. (diff.final_newline and diff.eol or '')
end

---@param text gemini_companion.Text
---@return string[]
local function split(text)
  return vim.split(text.text, text.eol, { plain = true })
end

---@param name string
---@param lines string[]
---@return integer
local function new_buffer(name, lines)
  local buf = vim.api.nvim_create_buf(false, false)
  if not pcall(vim.api.nvim_buf_set_name, buf, name) then
    vim.api.nvim_buf_set_name(buf, ('%s (%d)'):format(name, buf))
  end
  vim.bo[buf].swapfile = false
  -- 'hide' rather than 'wipe': `:q` on an edited proposal then hides it instead of failing
  -- with E37; we wipe both buffers ourselves when the diff is over.
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].undolevels = -1 -- the initial content is not an undoable change
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines) -- one batched call, whatever the size
  vim.bo[buf].undolevels = -123456 -- back to the global value
  return buf
end

---@param diff gemini_companion.Diff
---@param is_new boolean
local function set_headers(diff, is_new)
  local name = display(diff.path)
  local warning = ''
  local edited = modified_buffer(diff.path)
  if edited then
    warning = ('  ⚠ buffer %d has unsaved edits to this file'):format(edited)
  end
  for _, win in ipairs(vim.fn.win_findbuf(diff.proposal)) do
    local header = 'Proposed: %s  ·  :w accept  ·  :q reject  ·  do takes back a hunk%s'
    vim.wo[win].winbar = bar(header:format(name, warning))
  end
  local original = is_new and ('New file: %s (does not exist yet)') or 'Current: %s (read-only)'
  for _, win in ipairs(vim.fn.win_findbuf(diff.original)) do
    vim.wo[win].winbar = bar(original:format(name))
  end
end

--- Remove the tab's buffers (and with them its windows), then tell `User GeminiDiffClosed`.
---@param diff gemini_companion.Diff
---@param outcome 'accepted'|'rejected'|'closed'
local function cleanup(diff, outcome)
  local was_here = vim.api.nvim_get_current_tabpage() == diff.tab
  for _, buf in ipairs({ diff.proposal, diff.original }) do
    if vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
  -- Back to where the user was (the agent's terminal, typically), if they were reviewing.
  if was_here and outcome ~= 'closed' and vim.api.nvim_win_is_valid(diff.return_win) then
    vim.api.nvim_set_current_win(diff.return_win)
    if diff.return_to_terminal and vim.bo[vim.api.nvim_win_get_buf(diff.return_win)].buftype == 'terminal' then
      vim.cmd.startinsert()
    end
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiDiffClosed',
    modeline = false,
    data = { file = diff.path, outcome = outcome },
  })
end

--- The diff is over: forget it now, remove its tab once the current command is done
--- (we may be inside an autocommand of its buffers, or a `:wq` still has a window to close).
---@param diff gemini_companion.Diff
---@param outcome 'accepted'|'rejected'|'closed'
local function finish(diff, outcome)
  diff.done = true
  diffs[diff.id] = nil
  pcall(vim.api.nvim_del_augroup_by_id, diff.group)
  if diff.poll then
    diff.poll:stop()
    diff.poll:close()
  end
  vim.schedule(function()
    cleanup(diff, outcome)
  end)
end

--- Once the CLI has written an accepted file, reload the user's buffers of it: a stale
--- buffer must not overwrite the agent's change later. Unsaved edits are never discarded.
---@param path string
local function reload_after_write(path)
  if #file_buffers(path) == 0 then
    return
  end
  local function signature()
    local st = vim.uv.fs_stat(path)
    return st and table.concat({ st.ino, st.size, st.mtime.sec, st.mtime.nsec }, ':') or ''
  end
  local before = signature()
  local timer = assert(vim.uv.new_timer())
  local waited = 0
  timer:start(100, 100, function()
    waited = waited + 100
    if signature() == before and waited < 30000 then
      return
    end
    timer:stop()
    timer:close()
    vim.schedule(function()
      for _, buf in ipairs(file_buffers(path)) do
        if vim.bo[buf].modified then
          local message = '%s was changed by the agent, but buffer %d has unsaved edits: not reloaded'
            .. ' (:e! loads the new version)'
          notify(message:format(display(path), buf), WARN)
        else
          -- Answer the reload question ourselves: no prompt, even with 'noautoread'.
          local id = vim.api.nvim_create_autocmd('FileChangedShell', {
            buffer = buf,
            callback = function()
              vim.v.fcs_choice = 'reload'
            end,
          })
          pcall(vim.cmd.checktime, buf)
          pcall(vim.api.nvim_del_autocmd, id)
        end
      end
    end)
  end)
end

--- Send the proposal as accepted and close the tab.
---@param diff gemini_companion.Diff
local function accept(diff)
  local content = proposal_text(diff)
  vim.bo[diff.proposal].modified = false
  host.notify('diff_accepted', { id = diff.id, content = content })
  finish(diff, 'accepted')
  reload_after_write(diff.path)
end

---@param diff gemini_companion.Diff
local function reject(diff)
  -- While Neovim exits the host is stopping: it rejects every open diff itself.
  if vim.v.exiting == vim.NIL then
    host.notify('diff_rejected', { id = diff.id })
  end
  finish(diff, 'rejected')
end

--- Stat the file every second and ask Python to look when it changed. Not uv's fs_poll:
--- its first stat is taken asynchronously, so a change right after the diff opened could
--- become its baseline and go unseen. Here the first check always asks, and Python compares
--- with what it read when the diff opened.
---@param diff gemini_companion.Diff
local function watch(diff)
  local last ---@type string?
  diff.poll = vim.uv.new_timer()
  if not diff.poll then
    return
  end
  diff.poll:start(1000, 1000, function()
    vim.uv.fs_stat(diff.path, function(_, st)
      local now = st and ('%d:%d:%d:%d'):format(st.ino, st.size, st.mtime.sec, st.mtime.nsec) or 'missing'
      if now == last then
        return
      end
      last = now
      vim.schedule(function()
        if not diff.done then
          host.notify('diff_refresh', { id = diff.id })
        end
      end)
    end)
  end)
end

---@param spec gemini_companion.DiffSpec
local function open(spec)
  local replaced = M.find(spec.path)
  if replaced then
    finish(replaced, 'closed') -- the Python side has told its client
  end
  local options = config.options.diff
  local return_win = vim.api.nvim_get_current_win()
  ---@type gemini_companion.Diff
  local diff = {
    id = spec.id,
    path = spec.path,
    eol = spec.proposal.eol,
    final_newline = spec.proposal.final_newline,
    original = new_buffer('gemini://original' .. spec.path, split(spec.original)),
    proposal = new_buffer('gemini://proposed' .. spec.path, split(spec.proposal)),
    tab = 0,
    group = vim.api.nvim_create_augroup('gemini_companion_diff_' .. spec.id, { clear = true }),
    return_win = return_win,
    return_to_terminal = vim.api.nvim_get_mode().mode == 't',
    done = false,
  }
  diffs[diff.id] = diff

  vim.bo[diff.original].buftype = 'nofile'
  vim.bo[diff.original].modifiable = false
  vim.bo[diff.original].readonly = true
  vim.bo[diff.proposal].buftype = 'acwrite'
  local filetype = vim.filetype.match({ filename = spec.path, buf = diff.proposal })
  if filetype then
    vim.bo[diff.original].filetype = filetype
    vim.bo[diff.proposal].filetype = filetype
  end
  vim.bo[diff.proposal].modified = false

  -- Buffer numbers only: no path ever goes through an Ex command line.
  vim.cmd('tab sbuffer ' .. diff.original)
  diff.tab = vim.api.nvim_get_current_tabpage()
  local original_win = vim.api.nvim_get_current_win()
  -- Not `:sbuffer`: 'switchbuf' could turn that into yet another tab.
  local split = options.layout == 'vertical' and 'right' or 'below'
  local proposal_win = vim.api.nvim_open_win(diff.proposal, true, { split = split, win = original_win })
  for _, win in ipairs({ original_win, proposal_win }) do
    vim.api.nvim_win_call(win, function()
      vim.cmd('diffthis')
    end)
  end
  set_headers(diff, spec.is_new)
  vim.cmd('diffupdate')
  vim.api.nvim_win_set_cursor(proposal_win, { spec.first_change, 0 })
  vim.api.nvim_win_call(proposal_win, function()
    vim.cmd('normal! zvzz')
  end)

  vim.api.nvim_create_autocmd('BufWriteCmd', {
    group = diff.group,
    buffer = diff.proposal,
    callback = function()
      if vim.fn.win_gettype() == 'autocmd' then
        -- `:wall` or an auto-save plugin from elsewhere, not the user's `:w` in the diff.
        local message = 'the proposal for %s was not accepted: use :w in its window, or :GeminiAccept'
        notify(message:format(display(diff.path)), WARN)
        return
      end
      accept(diff)
    end,
  })
  -- `:x` and `ZZ` write only a modified buffer; an unedited proposal is accepted too.
  for _, exit in ipairs({ 'x', 'xi', 'xit', 'exi', 'exit' }) do
    vim.keymap.set('ca', exit, function()
      return (vim.fn.getcmdtype() == ':' and vim.fn.getcmdline() == exit) and 'wq' or exit
    end, { buffer = diff.proposal, expr = true })
  end
  vim.keymap.set('n', 'ZZ', '<Cmd>wq<CR>', { buffer = diff.proposal, desc = 'Accept the proposal' })
  -- BufWinLeave: the proposal is no longer shown anywhere (`:q`, `:close`, `:tabclose`,
  -- `:only` elsewhere, `:bd`, `:bw`, another buffer in its window). BufUnload covers a
  -- proposal unloaded while hidden.
  vim.api.nvim_create_autocmd({ 'BufWinLeave', 'BufUnload' }, {
    group = diff.group,
    buffer = diff.proposal,
    callback = function()
      if not diff.done then
        reject(diff)
      end
    end,
  })
  watch(diff)

  if options.focus then
    if diff.return_to_terminal then
      vim.cmd.stopinsert()
    end
  else
    vim.api.nvim_set_current_win(return_win)
    if diff.return_to_terminal then
      vim.cmd.startinsert()
    end
    local tab = vim.api.nvim_tabpage_get_number(diff.tab)
    notify(('proposed change to %s: review it in tab %d'):format(display(diff.path), tab), INFO)
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'GeminiDiffOpened',
    modeline = false,
    data = { file = diff.path },
  })
end

--- Open a diff (called by the Python side). On failure the diff is rejected, so the
--- agent does not wait for an answer that never comes.
---@param spec gemini_companion.DiffSpec
function M.open(spec)
  local ok, err = pcall(open, spec)
  if not ok then
    notify(('could not open the diff for %s: %s'):format(display(spec.path), err), ERROR)
    local diff = diffs[spec.id]
    if diff and not diff.done then
      reject(diff)
    elseif not diff then
      host.notify('diff_rejected', { id = spec.id })
    end
  end
end

--- Close a diff without an outcome (closeDiff); returns the proposal's text.
---@param id integer
---@return string?
function M.close(id)
  local diff = diffs[id]
  if not diff then
    return nil
  end
  local content = proposal_text(diff)
  finish(diff, 'closed')
  return content
end

--- Close diffs without an outcome (their client went away, or the server stopped).
---@param ids integer[]
function M.close_all(ids)
  for _, id in ipairs(ids) do
    if diffs[id] then
      finish(diffs[id], 'closed')
    end
  end
end

--- The file changed on disk while its diff was open: show its new content.
---@param id integer
---@param original (gemini_companion.Text|{is_new: boolean})?
---@param problem string? Why the file cannot be shown any more.
function M.original_changed(id, original, problem)
  local diff = diffs[id]
  if not diff then
    return
  end
  if not original then
    notify(('%s changed on disk and cannot be shown: %s'):format(display(diff.path), problem or '?'), WARN)
    return
  end
  vim.bo[diff.original].modifiable = true
  vim.api.nvim_buf_set_lines(diff.original, 0, -1, false, split(original))
  vim.bo[diff.original].modifiable = false
  set_headers(diff, original.is_new)
  notify(('%s changed on disk: the diff now shows its new content'):format(display(diff.path)), WARN)
end

--- The open diff for `path`, if any.
---@param path string
---@return gemini_companion.Diff?
function M.find(path)
  for _, diff in pairs(diffs) do
    if diff.path == path then
      return diff
    end
  end
end

--- Paths of the open diffs, oldest first.
---@return string[]
function M.files()
  local ids = vim.tbl_keys(diffs)
  table.sort(ids)
  return vim.tbl_map(function(id)
    return diffs[id].path
  end, ids)
end

--- The diff meant by a command argument: the named file, else the current tab's, else the only one.
---@param file? string
---@return gemini_companion.Diff?
local function target(file)
  if file and file ~= '' then
    local path = vim.fs.normalize(vim.fn.fnamemodify(file, ':p'))
    local diff = M.find(path)
    if not diff then
      notify(('no open diff for %s'):format(file), ERROR)
    end
    return diff
  end
  local tab = vim.api.nvim_get_current_tabpage()
  local only
  for _, diff in pairs(diffs) do
    if diff.tab == tab then
      return diff
    end
    only = only == nil and diff or false
  end
  if only then
    return only
  end
  notify(only == nil and 'no open diff' or 'several diffs are open: name the file', ERROR)
end

--- Accept a diff's proposal as it is now (:GeminiAccept).
---@param file? string
function M.accept(file)
  local diff = target(file)
  if diff then
    accept(diff)
  end
end

--- Reject a diff (:GeminiReject).
---@param file? string
function M.reject(file)
  local diff = target(file)
  if diff then
    reject(diff)
  end
end

--- Completion for :GeminiAccept / :GeminiReject.
---@param lead string
---@return string[]
function M.complete(lead)
  local names = vim.tbl_map(display, M.files())
  return vim.tbl_filter(function(name)
    return vim.startswith(name, lead)
  end, names)
end

--- For tests and statuslines: buffers and tab of the diff for `path`.
---@param path string
---@return {tab: integer, original: integer, proposal: integer}?
function M.info(path)
  local diff = M.find(path)
  if diff then
    return { tab = diff.tab, original = diff.original, proposal = diff.proposal }
  end
end

return M
