--- Picker actions that hand the chosen files to an agent, as `:GeminiAdd` does (the same code:
--- agents/commands.lua): the selected entries, or the entry under the cursor when none is selected.
--- A user puts these in their picker's config; each picker's part (context/pickers/) is loaded
--- when its action first runs, and this file requires nothing, so naming an action costs nothing.
local M = {}
local H = {}

--- telescope.nvim: a mapping's action, `function(prompt_bufnr)`. Closes the picker.
---@param prompt_bufnr integer
function M.telescope_action(prompt_bufnr)
  require('gemini_companion.context.pickers.telescope').action(prompt_bufnr)
end

--- fzf-lua: an `actions` entry, `function(selected, opts)` (fzf-lua closes its window itself).
---@param selected string[]
---@param opts table
function M.fzf_lua_action(selected, opts)
  require('gemini_companion.context.pickers.fzf_lua').action(selected, opts)
end

--- snacks.nvim picker and explorer: an action, `function(picker)`. Closes a picker; the explorer
--- stays open, its selection cleared.
---@param picker table
function M.snacks_action(picker)
  require('gemini_companion.context.pickers.snacks').action(picker)
end

--- Add `paths` (absolute, or relative to the working directory) to the agent last used (else the
--- default one), each as `:GeminiAdd path` would: for any other picker's action.
---@param paths string[]
function M.add(paths)
  if #paths == 0 then
    return require('gemini_companion.message').notify('GeminiAdd: no file in the picker', 'warn')
  end
  -- The agent named first, so that no path is taken for an agent's name.
  local args = { require('gemini_companion.agents').resolve(nil) }
  for _, path in ipairs(paths) do
    table.insert(args, H.plain(path))
  end
  require('gemini_companion.agents.commands').add({ fargs = args })
end

--- `path` without its `.` parts (a picker joins its folder and `./name`): they would show in the
--- reference. Nothing else is touched (`..` is not resolved: a link's parent is not the path's).
---@param path string
---@return string
function H.plain(path)
  local previous
  while path ~= previous do
    previous = path
    path = path:gsub('/%./', '/'):gsub('^%./(.)', '%1')
  end
  return path
end

return M
