--- lsp_hover: the language server's hover text at a position.
local lsp = require('gemini_companion.tools.lsp')

return lsp.position_tool('textDocument/hover', function(results)
  local parts = {}
  for _, answer in pairs(results) do
    local contents = answer.result and answer.result.contents
    if type(contents) == 'string' then
      table.insert(parts, contents)
    elseif type(contents) == 'table' then
      if contents.value then
        table.insert(parts, contents.value)
      else
        for _, item in ipairs(contents) do
          table.insert(parts, type(item) == 'string' and item or item.value)
        end
      end
    end
  end
  return { hover = table.concat(parts, '\n\n') }
end)
