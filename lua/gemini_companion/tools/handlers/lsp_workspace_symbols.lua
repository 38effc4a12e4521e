--- lsp_workspace_symbols: the workspace's symbols matching a query.
local lsp = require('gemini_companion.tools.lsp')

return function(args, done)
  local method = 'workspace/symbol'
  local client = vim.lsp.get_clients({ method = method })[1]
  local buf = client and next(client.attached_buffers or {})
  if not buf then
    return done(nil, 'no language server that answers workspace/symbol is attached (open a file of the project)')
  end
  lsp.request(buf, method, { query = args.query }, function(results, err)
    lsp.symbols(results, err, args.roots, nil, done)
  end)
end
