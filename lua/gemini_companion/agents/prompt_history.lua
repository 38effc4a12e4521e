--- The prompts sent from `:GeminiPrompt` (agents/compose.lua), newest last, kept across sessions
--- in the state folder (a JSON list, 0600, written whole and atomically, off the main loop). Read
--- once, off the main loop; a file that is not such a list is left alone and not written over.
local files = require('gemini_companion.files')
local message = require('gemini_companion.message')

local M = {}

-- Prompts kept.
M.MAX = 100
-- A history file larger than this is not read (nor written over).
local LIMIT = 4 * 1024 * 1024

local entries ---@type string[]? nil until read
local unreadable = false -- the file is there but not ours to replace
local waiting = {} ---@type fun(entries: string[])[]
local writing, dirty = false, false
local save -- below the public functions

--- The prompts, oldest first, to `done` (at once once read).
---@param done fun(entries: string[])
function M.load(done)
  if entries then
    return done(entries)
  end
  table.insert(waiting, done)
  if #waiting > 1 then
    return
  end
  files.read_async(M.path(), LIMIT, function(text, why)
    vim.schedule(function()
      local ok, list = pcall(vim.json.decode, text or '[]')
      unreadable = (text == nil and not (why or ''):find('^ENOENT')) or not ok or type(list) ~= 'table'
      local loaded = vim.tbl_filter(function(entry)
        return type(entry) == 'string'
      end, not unreadable and list or {})
      entries = loaded
      for _, fn in ipairs(waiting) do
        fn(entries)
      end
      waiting = {}
    end)
  end)
end

--- Keep `text` as the newest prompt (an equal older one goes), and write the history.
---@param text string
function M.add(text)
  M.load(function(list)
    for i = #list, 1, -1 do
      if list[i] == text then
        table.remove(list, i)
      end
    end
    table.insert(list, text)
    while #list > M.MAX do
      table.remove(list, 1)
    end
    if not unreadable then -- the user's own file (or a damaged one) is never replaced
      save()
    end
  end)
end

--- Where the history is kept.
---@return string
function M.path()
  return vim.fn.stdpath('state') .. '/gemini-companion/prompt-history.json'
end

--- Write the history, one write at a time: a prompt added meanwhile is written after it.
function save()
  if writing then
    dirty = true
    return
  end
  writing, dirty = true, false
  local path, text = M.path(), vim.json.encode(entries)
  vim.uv.fs_mkdir(vim.fs.dirname(path), tonumber('700', 8), function()
    files.write_async(path, text, tonumber('600', 8), function(err)
      vim.schedule(function()
        writing = false
        if err then
          message.notify(('GeminiPrompt: history not kept: %s'):format(err), 'warn')
        elseif dirty then
          save()
        end
      end)
    end)
  end)
end

return M
