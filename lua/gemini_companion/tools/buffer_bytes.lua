--- Whether a buffer holds exactly the bytes tools.py read of its file: Neovim's reading undone
--- (byte order mark, line endings, final newline, encoding), any doubt a mismatch.
local M = {}
local H = {}

-- The byte order mark Neovim reads and writes for each encoding that has one ('bomb').
local BOM = {
  ['utf-8'] = '\239\187\191',
  ['utf-16'] = '\254\255',
  ['utf-16le'] = '\255\254',
  ['ucs-2'] = '\254\255',
  ['ucs-2le'] = '\255\254',
  ['ucs-4'] = '\0\0\254\255',
  ['ucs-4le'] = '\255\254\0\0',
}
-- Neovim's big-endian 16-bit encodings: vim.iconv hands their names to the system's iconv,
-- which makes them little-endian (with a BOM of its own for 'utf-16'). Converted to the
-- little-endian twin here, then each pair of bytes swapped.
local BIG_ENDIAN_16 = { ['utf-16'] = 'utf-16le', ['ucs-2'] = 'ucs-2le' }

--- `text` (UTF-8) in the file encoding `fenc` as Neovim writes it, without a BOM; nil if it
--- cannot be converted.
---@param text string
---@param fenc string
---@return string?
function H.encode(text, fenc)
  if fenc == 'utf-8' or text == '' then
    return text
  end
  local twin = BIG_ENDIAN_16[fenc]
  local out = vim.iconv(text, 'utf-8', twin or fenc)
  if out and twin then
    out = out:gsub('(.)(.)', '%2%1')
  end
  return out
end

--- Whether Neovim read exactly `data` into `buf`: its reading undone (byte order mark, line
--- endings, final newline, encoding). Any doubt is a mismatch.
---@param buf integer
---@param data string
---@return boolean
function M.holds(buf, data)
  local bo = vim.bo[buf]
  local fenc = bo.fileencoding ~= '' and bo.fileencoding or 'utf-8'
  if bo.bomb then
    local bom = BOM[fenc]
    if not bom or data:sub(1, #bom) ~= bom then
      return false
    end
    data = data:sub(#bom + 1)
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  -- An empty file and a lone newline both read as one empty line; only the first has no bytes.
  local nothing = #lines == 1
    and lines[1] == ''
    and vim.api.nvim_buf_call(buf, function()
      return vim.fn.line2byte(2)
    end) == -1
  if nothing or data == '' then
    return nothing and data == ''
  end
  local eol = ({ dos = '\r\n', mac = '\r' })[bo.fileformat] or '\n'
  return H.encode(table.concat(lines, eol) .. (bo.eol and eol or ''), fenc) == data
end

--- Whether a loaded buffer answers for its file. Unsaved edits are the user's own text (Neovim
--- never reloads such a buffer unasked); an unmodified one answers only while it holds the bytes
--- tools.py read inside the workspace, for 'autoread' reloads a buffer from whatever its name
--- points at when Neovim next checks the file (entering it, :checktime), a link to outside too.
---@param buf integer
---@param file gemini_companion.tools.File
---@return boolean
function M.answers(buf, file)
  return vim.bo[buf].modified or (file.data ~= nil and not file.partial and M.holds(buf, file.data))
end

return M
