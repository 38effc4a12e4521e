--- lsp_definition: where the symbol at a position is defined.
local lsp = require('gemini_companion.tools.lsp')

return lsp.position_tool('textDocument/definition', function(results, args)
  local items, outside = lsp.locations(results, args.roots, args.buffers)
  return { definitions = items, outside_workspace = outside }
end)
