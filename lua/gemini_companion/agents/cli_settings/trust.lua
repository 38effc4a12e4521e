--- Does Gemini CLI trust a folder? It starts no MCP server and runs no hooks in an untrusted one:
--- :checkhealth and an agent's start say why, in Gemini's own order.
local cli_settings = require('gemini_companion.agents.cli_settings')
local env = require('gemini_companion.env')
local json_file = require('gemini_companion.json_file')

local M = {}

--- Does Gemini CLI trust `dir` (it starts no MCP server and runs no hooks in an untrusted
--- folder)? Its own order: its trust variables, then `security.folderTrust.enabled`
--- (on by default), then the longest matching rule of its trustedFolders.json. nil: no rule,
--- so Gemini asks at start.
---@param dir string
---@return boolean? trusted, string why
function M.gemini(dir)
  local trust = vim.env[env.gemini_trust_workspace]
  if vim.env[env.gemini_restricted] == 'true' or trust == 'false' then
    return false, ('%s=false or %s=true'):format(env.gemini_trust_workspace, env.gemini_restricted)
  elseif trust == 'true' then
    return true, env.gemini_trust_workspace .. '=true'
  end
  local settings = json_file.read(cli_settings.path('gemini')) or {}
  if vim.tbl_get(settings, 'security', 'folderTrust', 'enabled') == false then
    return true, 'folder trust is off (security.folderTrust.enabled)'
  end
  local rules_path = vim.env[env.gemini_trusted_folders]
  if not rules_path or rules_path == '' then
    rules_path = vim.fs.dirname(cli_settings.path('gemini')) .. '/trustedFolders.json'
  end
  local rules = json_file.read(rules_path)
  if not rules then
    return false, rules_path .. ' cannot be read (Gemini stops on it too)'
  end
  local real = vim.uv.fs_realpath(dir) or dir
  local best, level = -1, nil
  for rule, rule_level in pairs(rules) do
    local base = rule_level == 'TRUST_PARENT' and vim.fs.dirname(rule) or rule
    base = vim.uv.fs_realpath(base) or base
    if (real == base or vim.startswith(real, base .. '/')) and #rule > best then
      best, level = #rule, rule_level
    end
  end
  local where = vim.fn.fnamemodify(rules_path, ':~')
  if level == 'DO_NOT_TRUST' then
    return false, ('%s marks it DO_NOT_TRUST'):format(where)
  elseif level then
    return true, ('%s trusts it (%s)'):format(where, level)
  end
  return nil, ('no rule in %s: Gemini asks at start'):format(where)
end

return M
