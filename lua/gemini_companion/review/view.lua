--- A review's rendering: its buffers, winbars and highlighting (placement.lua opens its windows).
--- Buffers are named and filled through the API only: nothing in a path is parsed as Ex.

local M = {}
local H = {}

---@param path string
---@return string
function M.display(path)
  return vim.fn.fnamemodify(path, ':~:.')
end

--- Loaded buffers of the user's that show `path`.
---@param path string
---@return integer[]
function M.file_buffers(path)
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
function M.modified_buffer(path)
  for _, buf in ipairs(M.file_buffers(path)) do
    if vim.bo[buf].modified then
      return buf
    end
  end
end

--- A winbar is a statusline format: '%' in a path must not be read as an item.
---@param text string
---@return string
function M.bar(text)
  return (text:gsub('%%', '%%%%'))
end

---@param text gemini_companion.Text
---@return string[]
function M.split(text)
  return vim.split(text.text, text.eol, { plain = true })
end

--- Replace a buffer's text without making it an undoable change.
---@param buf integer
---@param lines string[]
function M.set_text(buf, lines)
  local modifiable = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  vim.bo[buf].undolevels = -1
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines) -- one batched call, whatever the size
  vim.bo[buf].undolevels = -123456 -- back to the global value
  vim.bo[buf].modifiable = modifiable
end

---@param name string
---@return integer
function M.new_buffer(name)
  local buf = vim.api.nvim_create_buf(false, false)
  if not pcall(vim.api.nvim_buf_set_name, buf, name) then
    vim.api.nvim_buf_set_name(buf, ('%s (%d)'):format(name, buf))
  end
  vim.bo[buf].swapfile = false
  vim.bo[buf].modeline = false -- `:e!` reads the text again: a modeline in it is data, not options
  -- 'hide' rather than 'wipe': `:q` on a proposal then hides it instead of failing with
  -- E37; we wipe both buffers ourselves when the review is over.
  vim.bo[buf].bufhidden = 'hide'
  return buf
end

--- The winbars: what the user can do, and every warning that holds (never a transient message only).
---@param review gemini_companion.Review
function M.set_headers(review)
  local name = M.display(review.path)
  local warnings = {}
  if review.orphaned then
    table.insert(
      warnings,
      ('⚠ ORPHANED: %s · :GeminiAccept! writes it to the file · :q drops it'):format(review.orphaned)
    )
  end
  if review.stale then
    table.insert(warnings, ('⚠ %s · :GeminiAccept! accepts anyway'):format(review.stale))
  end
  local buf = M.modified_buffer(review.path)
  if buf then
    table.insert(warnings, ('⚠ buffer %d has unsaved edits to this file'):format(buf))
  end
  local header = review.orphaned and 'Orphaned proposal: %s'
    or 'Proposed by %s: %s  ·  :w accept · :q reject · do take a hunk back'
  header = review.orphaned and header:format(name) or header:format(review.agent or 'the agent', name)
  if #warnings > 0 then
    header = header .. '  ' .. table.concat(warnings, '  ')
  end
  for _, shown in ipairs({ review.proposal, review.unified }) do
    for _, win in ipairs(vim.fn.win_findbuf(shown)) do
      H.winbar(win, M.bar(header))
    end
  end
  local original = review.is_new and 'New file: %s (does not exist yet)' or 'Current: %s (read-only, follows the disk)'
  for _, win in ipairs(vim.fn.win_findbuf(review.original)) do
    H.winbar(win, M.bar(original:format(name)))
  end
end

--- Wipe buffers other than `keep` named `name` (renaming leaves the old name behind as an
--- alternate buffer).
---@param name string
---@param keep integer
function M.wipe_named(name, keep)
  for _, other in ipairs(vim.api.nvim_list_bufs()) do
    if other ~= keep and vim.api.nvim_buf_get_name(other) == name then
      pcall(vim.api.nvim_buf_delete, other, { force = true })
    end
  end
end

---@param buf integer
---@param name string
---@return boolean
function M.rename(buf, name)
  local old = vim.api.nvim_buf_get_name(buf)
  M.wipe_named(name, buf)
  local ok = pcall(vim.api.nvim_buf_set_name, buf, name)
  M.wipe_named(old, buf)
  return ok
end

--- The file's filetype, from its buffer when it has one (no detection). The proposal gets the
--- whole filetype (ftplugin, indent: the user may edit it); the read-only left side the name
--- (for statuslines) without FileType autocommands, and only its highlighting, which costs a
--- third as much: the treesitter language when the user's FileType autocommands started
--- treesitter on the proposal, else the syntax.
---@param review gemini_companion.Review
function M.highlight(review)
  local loaded = M.file_buffers(review.path)[1]
  local filetype = loaded and vim.bo[loaded].filetype or ''
  if filetype == '' then
    filetype = vim.filetype.match({ filename = review.path, buf = review.proposal }) or ''
  end
  if filetype == '' then
    return
  end
  vim.bo[review.proposal].filetype = filetype
  local eventignore = vim.o.eventignore
  vim.o.eventignore = 'FileType'
  vim.bo[review.original].filetype = filetype
  vim.o.eventignore = eventignore
  -- Not loaded: no buffer is highlighted by tree-sitter, and loading it would cost this open ~3 ms.
  local highlighter = package.loaded['vim.treesitter.highlighter']
  local lang = highlighter and highlighter.active[review.proposal] and vim.treesitter.language.get_lang(filetype)
  if lang and pcall(vim.treesitter.start, review.original, lang) then
    return
  end
  vim.bo[review.original].syntax = filetype
end

--- The winbar of the review's buffer in `win` only (`:setlocal`): a buffer that comes into the
--- window after it (`:e other`, `:b#`) has the window's own winbar, as Vim keeps window options
--- per buffer.
---@param win integer
---@param text string
function H.winbar(win, text)
  vim.api.nvim_set_option_value('winbar', text, { scope = 'local', win = win })
end

return M
