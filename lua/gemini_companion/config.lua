---@class gemini_companion.Config
---@field auto_start boolean Start the server when Neovim starts.
---@field workspace_folders string[]|fun():string[] Extra workspace roots besides Neovim's working directories.

local M = {}

---@type gemini_companion.Config
M.defaults = {
  auto_start = true,
  workspace_folders = {},
}

---@type gemini_companion.Config
M.options = vim.deepcopy(M.defaults)

---@param value any
---@return boolean
local function is_folder_list(value)
  return type(value) == 'function' or vim.islist(value)
end

--- Merge `opts` over the defaults; raises a readable error for a wrong option.
---@param opts? table
function M.set(opts)
  opts = opts or {}
  vim.validate('opts', opts, 'table')
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  vim.validate('auto_start', merged.auto_start, 'boolean')
  vim.validate('workspace_folders', merged.workspace_folders, is_folder_list, 'list of paths or function')
  for key in pairs(opts) do
    if M.defaults[key] == nil then
      error(('gemini-companion: unknown option %q'):format(key), 0)
    end
  end
  M.options = merged
end

return M
