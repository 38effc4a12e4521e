--- lsp_references: every reference to the symbol at a position.
local lsp = require('gemini_companion.tools.lsp')

return lsp.position_tool('textDocument/references', function(results, args)
  local items, outside = lsp.locations(results, args.roots, args.buffers)
  return { references = items, count = #items, outside_workspace = outside }
end)
