--- lsp_document_symbols: the symbols of one file, flattened.
local hidden = require('gemini_companion.tools.hidden')
local lsp = require('gemini_companion.tools.lsp')
local paths = require('gemini_companion.tools.paths')

return function(args, done)
  local method = 'textDocument/documentSymbol'
  lsp.buffer(args, method, function(buf, err)
    if not buf then
      return done(nil, err)
    end
    lsp.request(buf, method, { textDocument = { uri = vim.uri_from_bufnr(buf) } }, function(results, rerr)
      hidden.release(buf)
      lsp.symbols(results, rerr, args.roots, paths.relative(args.path, args.roots), done)
    end)
  end)
end
