--- `:GeminiCompanion conflict`: a buffer whose file changed on disk under unsaved edits, compared
--- in a new tab: your edits (the buffer itself), the file as the agent left it, and the text
--- before the last recorded turn that changed it (changes/' snapshot; without one, two ways).
--- Nothing is written or reloaded: `:diffget`/`:diffput` and `:w` are the user's.
local files = require('gemini_companion.files')
local message = require('gemini_companion.message')

local M = {}
local before, show -- below the public function

--- Open the comparison for `buf` (default: the current buffer, else the one buffer in conflict).
---@param buf? integer
function M.open(buf)
  local follow = require('gemini_companion.follow')
  buf = buf or vim.api.nvim_get_current_buf()
  if follow.state(buf) ~= 'conflict' then
    local marked = vim.tbl_filter(function(b)
      return follow.state(b) == 'conflict'
    end, vim.api.nvim_list_bufs())
    if #marked ~= 1 then
      local why = #marked == 0 and 'no buffer has unsaved edits under a file changed on disk'
        or ('%d buffers do: run it in the one to compare'):format(#marked)
      return message.notify('conflict: ' .. why, 'warn')
    end
    buf = marked[1]
  end
  local name = vim.api.nvim_buf_get_name(buf)
  local limit = require('gemini_companion.config').options.changes.max_file_kb * 1024
  files.read_async(name, limit, function(disk, why)
    vim.uv.fs_realpath(name, function(_, real)
      vim.schedule(function()
        if not disk then
          return message.notify(('conflict: %s cannot be read: %s'):format(vim.fn.strtrans(name), why), 'warn')
        end
        before(real or name, function(text, label)
          show(buf, disk, text, label)
        end)
      end)
    end)
  end)
end

-- --- the text before the turn ------------------------------------------------------------------

--- The file's text before the last ended turn that changed it, read from that turn's snapshot
--- (our repository, git off the main loop); nil when no recorded turn changed it.
---@param path string resolved
---@param done fun(text: string?, label: string?)
function before(path, done)
  local changes = package.loaded['gemini_companion.changes']
  for i = #(changes and changes.turns or {}), 1, -1 do
    local turn = changes.turns[i]
    local rel = vim.startswith(path, turn.work_tree .. '/') and path:sub(#turn.work_tree + 2)
    local touched = rel and vim.iter(turn.files):any(function(file)
      return file.path == rel
    end)
    if touched then
      local env = {}
      for key, value in pairs(vim.fn.environ()) do
        env[key] = not key:find('^GIT_') and value or nil -- none sends git elsewhere
      end
      env.GIT_ALTERNATE_OBJECT_DIRECTORIES = turn.alternates ~= '' and turn.alternates or nil
      local argv = { 'git', '--no-pager', '--git-dir', turn.git_dir, 'cat-file', 'blob', turn.before .. ':' .. rel }
      local label = ("before %s's turn %d"):format(turn.agent, turn.id)
      local ok = pcall(vim.system, argv, { env = env, clear_env = true, timeout = 5000 }, function(out)
        vim.schedule(function()
          done(out.code == 0 and out.stdout or '', label) -- absent before the turn: created by it
        end)
      end)
      if not ok then
        done(nil)
      end
      return
    end
  end
  done(nil)
end

-- --- the view --------------------------------------------------------------------------------

--- `text`'s lines as Neovim read `buf`'s file: its encoding, byte order mark and line endings
--- (else a CR LF file's every line differs by its ^M).
---@param text string
---@param buf integer
---@return string[]
local function as_read(text, buf)
  local bo = vim.bo[buf]
  if bo.fileencoding ~= '' and bo.fileencoding ~= 'utf-8' then
    text = vim.iconv(text, bo.fileencoding, 'utf-8') or text
  end
  text = bo.bomb and text:gsub('^\239\187\191', '') or text
  local ending = ({ dos = '\r\n', mac = '\r' })[bo.fileformat]
  text = ending and text:gsub(ending, '\n') or text -- (a lone LF still ends a line: a line holds none)
  return vim.split(text:sub(-1) == '\n' and text:sub(1, -2) or text, '\n', { plain = true })
end

--- A read-only scratch buffer named `name` holding `text`, with `buf`'s filetype.
---@param name string
---@param text string
---@param buf integer
---@return integer
local function scratch(name, text, buf)
  local old = vim.fn.bufnr(('^%s$'):format(vim.fn.escape(name, '\\^$.*~[]')))
  if old > 0 then
    pcall(vim.api.nvim_buf_delete, old, { force = true })
  end
  local new = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(new, name)
  vim.api.nvim_buf_set_lines(new, 0, -1, false, as_read(text, buf))
  vim.bo[new].bufhidden, vim.bo[new].modifiable = 'wipe', false
  vim.bo[new].filetype = vim.bo[buf].filetype
  return new
end

--- The tab: your edits | the agent's file | before the turn, each labelled, in diff mode.
---@param buf integer
---@param disk string
---@param text string?
---@param label string?
function show(buf, disk, text, label)
  if not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local path = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':~:.')
  vim.cmd('tab split')
  vim.api.nvim_win_set_buf(0, buf)
  local panes = { { vim.api.nvim_get_current_win(), 'your unsaved edits' } }
  local sides = { { 'gemini-conflict://disk/' .. path, disk, 'on disk (the agent)' } }
  if text then
    table.insert(sides, { 'gemini-conflict://before/' .. path, text, label })
  end
  for _, side in ipairs(sides) do
    vim.cmd('rightbelow vsplit')
    vim.api.nvim_win_set_buf(0, scratch(side[1], side[2], buf))
    table.insert(panes, { vim.api.nvim_get_current_win(), side[3] })
  end
  for _, pane in ipairs(panes) do
    vim.wo[pane[1]].winbar = (vim.fn.strtrans(pane[2]):gsub('%%', '%%%%'))
    vim.api.nvim_win_call(pane[1], vim.cmd.diffthis)
  end
  vim.api.nvim_set_current_win(panes[1][1])
end

return M
