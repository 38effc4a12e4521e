--- How `:GeminiAdd` hands one file (or directory) to an agent's CLI so that the model gets exactly
--- that file: an `@path` reference where the CLI reads it as itself, else the plain path in a code
--- span for the model to read with its own file tool. Measured with Gemini CLI 0.61 and Qwen Code
--- 0.24.4 (tests/agents/test_add_names_real_clis.py, tests/unit/test_at_path_parsers.py):
--- - Gemini's parser takes every backslash away, then reads the file through a glob of its absolute
---   path (read_many_files): `@app/\[id\]/page.tsx` reads app/i/page.tsx and app/d/page.tsx, never
---   the file itself, and no escape survives. A name with `"` or `..`, or a part that starts like
---   a test log (`FAIL `, `✓ `…), it drops (its validatePath: noise, of which it may read one word).
---   Its glob ignores case, in every part of the path: `@up/y.txt` also sent Up/y.txt.
--- - Qwen reads an `@path` as itself after its escapes, except a backslash (its reader drops it).
--- - Both end an `@path` before a dot that ends it (`@./dot.` is `./dot`), and Qwen keeps `\.`.
--- - Both CLIs' read_file tools read a plain path as itself (Qwen's wants it absolute).
local prompt = require('gemini_companion.agents.prompt')

local M = {}

--- What to type for `path` (it exists), or nil and why not: no form reaches exactly that file.
---@param path string
---@param cli? 'gemini'|'qwen' nil: a CLI read as Gemini is
---@return string? text, string? why
function M.form(path, cli)
  local ref = prompt.reference(path)
  local absolute = prompt.absolute(path)
  local gemini_misreads = cli ~= 'qwen' and (M.noise(ref) or M.case_twin(absolute))
  if not prompt.globbed(absolute, cli) and not gemini_misreads and ref:sub(-1) ~= '.' then
    return ref
  end
  local plain = cli == 'qwen' and absolute or prompt.display(path)
  if vim.fn.isdirectory(absolute) == 1 and not plain:match('/$') then
    plain = plain .. '/'
  end
  plain = prompt.text(plain, true)
  if plain:find('@', 1, true) then
    -- Both CLIs read an unescaped @ in the prompt as a reference; an escaped one reaches the model
    -- with its backslash.
    return nil, 'an @ the CLI would misread'
  end
  return M.code(plain)
end

--- Whether Gemini CLI would drop `ref` (`@path`, escaped) as noise, by what it holds after its
--- unescaping: a `"` or `..` anywhere (measured: even `a...b.txt` is not read), or a part that
--- starts like a test runner's log line.
---@param ref string
---@return boolean
function M.noise(ref)
  local name = '/' .. ref:sub(2):gsub('\\(.)', '%1')
  if name:find('"', 1, true) or name:find('..', 1, true) then
    return true
  end
  for _, marker in ipairs({ 'AssertionError:', 'FAIL ', '✓ ', '× ', 'TestingLibraryElementError:' }) do
    if name:find('[/\\]' .. vim.pesc(marker)) then
      return true
    end
  end
  return false
end

--- Whether a glob of `absolute` that ignores case (Gemini CLI's) would match another file too: a
--- part of the path has a sibling that differs from it only in case (README.md and readme.md).
--- Reads each folder on the way, as the glob does (a twin's length in bytes is the part's: a
--- shortcut that misses the few letters whose cases differ in length, like K and the Kelvin sign).
---@param absolute string
---@return boolean
function M.case_twin(absolute)
  local dir = '/'
  for part in absolute:gmatch('[^/]+') do
    local lower = vim.fn.tolower(part)
    local handle = vim.uv.fs_scandir(dir)
    local name = handle and vim.uv.fs_scandir_next(handle)
    while name do
      if #name == #part and name ~= part and vim.fn.tolower(name) == lower then
        return true
      end
      name = vim.uv.fs_scandir_next(handle)
    end
    dir = vim.fs.joinpath(dir, part)
  end
  return false
end

--- `text` as a Markdown code span: a fence longer than any run of backticks in it, and a space
--- inside each end when the text starts or ends with a backtick (a code span drops one each side).
--- A span starts with a backtick, so the prompt never starts with `/` or `!` (a command).
---@param text string
---@return string
function M.code(text)
  local longest = 0
  for run in text:gmatch('`+') do
    longest = math.max(longest, #run)
  end
  local fence = ('`'):rep(longest + 1)
  local pad = (text:find('^`') or text:find('`$')) and ' ' or ''
  return fence .. pad .. text .. pad .. fence
end

return M
