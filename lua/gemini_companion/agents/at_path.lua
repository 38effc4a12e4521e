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
local H = {}

--- How long `look` waits for a path's folders (one on a hung mount never answers). Generous: a
--- slow disk answers well within it.
M.timeout_ms = 10000
local CHUNK = 256 -- names per read: each callback on the main loop stays short

---@class gemini_companion.AtPathSeen
---@field directory boolean
---@field twin boolean Gemini's glob would match another name too (`M.case_twin`).

---@class gemini_companion.AtPathLook
---@field finished boolean
---@field read {target: string, late: boolean?}? the read it waits for

--- The folders read for the looks of one command, by path: each folder is read once, whole, its
--- names by their lower case (nil: it could not be read), for every path in it.
---@alias gemini_companion.AtPathListings table<string, {names: table<string, string[]>?, waiting: fun(names: table<string, string[]>?)[]?}>

--- Reads still waiting after their look gave up (a hung mount), per path or folder read: a look
--- at or under one answers at once as on the bound. Each such read holds one of libuv's four
--- threads until it returns, and every later read of Neovim's would queue behind them.
---@type table<string, integer>
local stuck = {}

--- What the form of `path` depends on, read off the main loop: that it exists, whether it is a
--- folder and (for a CLI read as Gemini) whether it has a twin in another case. `done(seen)` on
--- the main loop, or `done(nil, why)`. Bounded by `M.timeout_ms`: a path whose stat does not
--- answer is refused; one whose folders do not answer counts as having a twin, so it goes as the
--- plain path, which the model's file tool reads as itself whatever its twins (an `@path` might
--- read another file too).
---@param path string
---@param cli? 'gemini'|'qwen'
---@param listings gemini_companion.AtPathListings the folders read for the looks of one command
---@param done fun(seen: gemini_companion.AtPathSeen?, why: string?)
function M.look(path, cli, listings, done)
  local absolute, seen = prompt.absolute(path), nil
  local look = { finished = false } ---@type gemini_companion.AtPathLook
  local timer = assert(vim.uv.new_timer())
  local no_answer = ('no answer from its folder in %d s'):format(M.timeout_ms / 1000)
  local function finish(why)
    if not look.finished then
      look.finished = true
      timer:stop()
      timer:close()
      vim.schedule(function()
        done(not why and seen or nil, why)
      end)
    end
  end
  if H.stuck(absolute) then
    return finish(no_answer)
  end
  timer:start(M.timeout_ms, 0, function()
    if look.read then -- not waited for any more: stuck until it answers
      look.read.late = true
      stuck[look.read.target] = (stuck[look.read.target] or 0) + 1
    end
    if not seen then
      return finish(no_answer)
    end
    seen.twin = true
    finish()
  end)
  local answered = H.reading(look, absolute)
  vim.uv.fs_stat(absolute, function(_, stat)
    answered()
    if look.finished then
      return
    elseif not stat then
      return finish('no such file')
    end
    seen = { directory = stat.type == 'directory', twin = false }
    if cli == 'qwen' then
      return finish()
    end
    M.case_twin(absolute, look, listings, function(twin)
      seen.twin = seen.twin or twin
      finish()
    end)
  end)
end

--- What to type for `path` (it exists: `seen` is what `look` found), or nil and why not: no form
--- reaches exactly that file.
---@param path string
---@param cli? 'gemini'|'qwen' nil: a CLI read as Gemini is
---@param seen? gemini_companion.AtPathSeen nil: a file without a twin
---@return string? text, string? why
function M.form(path, cli, seen)
  local inexact = M.inexact(path)
  if inexact then
    return nil, inexact
  end
  seen = seen or { directory = false, twin = false }
  local ref = prompt.reference(path, seen.directory)
  local absolute = prompt.absolute(path)
  local gemini_misreads = cli ~= 'qwen' and (M.noise(ref) or seen.twin)
  if not prompt.globbed(absolute, cli) and not gemini_misreads and ref:sub(-1) ~= '.' then
    return ref
  end
  local plain = cli == 'qwen' and absolute or prompt.display(path)
  if seen.directory and not plain:match('/$') then
    plain = plain .. '/'
  end
  plain = prompt.text(plain, true)
  if plain:find('@', 1, true) then
    -- Both CLIs read an unescaped @ in the prompt as a reference; an escaped one reaches the model
    -- with its backslash.
    return nil, 'an @ the CLI would misread'
  elseif cli ~= 'qwen' and absolute:find('"', 1, true) then
    -- Its read_file tool refuses one too (validatePath: past 20 characters, as any absolute path).
    return nil, 'a " Gemini CLI cannot read'
  end
  return M.code(plain)
end

--- Why no form of `path` reaches a CLI as exactly that name (nil: one may): every form is text in
--- the prompt, where a control character or a byte that is not UTF-8 would be shown as a symbol
--- (prompt.text).
---@param path string
---@return string?
function M.inexact(path)
  local absolute = prompt.absolute(path)
  if absolute:find('[%z\1-\31\127]') then
    return 'a control character'
  elseif prompt.text(absolute, true) ~= absolute then
    return 'not UTF-8'
  end
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
--- shortcut that misses the few letters whose cases differ in length, like K and the Kelvin sign),
--- off the main loop: a chunk of names per callback, `done(twin)` from a fast callback. A folder
--- that cannot be read holds no twin; one still stuck from an earlier look counts as holding one.
--- It stops once `look` is finished (a folder being read goes on for the other looks).
---@param absolute string
---@param look gemini_companion.AtPathLook
---@param listings gemini_companion.AtPathListings
---@param done fun(twin: boolean)
function M.case_twin(absolute, look, listings, done)
  local parts = vim.split(absolute, '/', { trimempty = true })
  local function step(i, dir)
    if i > #parts or look.finished then
      return done(false)
    elseif H.stuck(dir) then
      return done(true)
    end
    H.sibling(dir, parts[i], look, listings, function(found)
      if found then
        return done(true)
      end
      step(i + 1, vim.fs.joinpath(dir, parts[i]))
    end)
  end
  step(1, '/')
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

--- Whether folder `dir` holds a name that differs from `part` only in case.
---@param dir string
---@param part string
---@param look gemini_companion.AtPathLook
---@param listings gemini_companion.AtPathListings
---@param done fun(found: boolean)
function H.sibling(dir, part, look, listings, done)
  H.listed(dir, look, listings, function(names)
    for _, name in ipairs(names and names[vim.fn.tolower(part)] or {}) do
      if #name == #part and name ~= part then
        return done(true)
      end
    end
    done(false)
  end)
end

--- The names in folder `dir` by their lower case to `done` (nil: it cannot be read), read once
--- for all the looks sharing `listings`: the first one reads it, a chunk per callback.
---@param dir string
---@param look gemini_companion.AtPathLook
---@param listings gemini_companion.AtPathListings
---@param done fun(names: table<string, string[]>?)
function H.listed(dir, look, listings, done)
  local listing = listings[dir]
  if listing and listing.waiting then
    return table.insert(listing.waiting, done)
  elseif listing then
    return done(listing.names)
  end
  listing = { waiting = { done } }
  listings[dir] = listing
  local names = {} ---@type table<string, string[]>
  local function settle(result)
    local waiting = listing.waiting or {}
    listing.names, listing.waiting = result, nil
    for _, fn in ipairs(waiting) do
      fn(result)
    end
  end
  local answered = H.reading(look, dir)
  vim.uv.fs_opendir(dir, function(_, handle)
    answered()
    if not handle then
      return settle(nil)
    end
    local function read()
      answered = H.reading(look, dir)
      vim.uv.fs_readdir(handle, function(_, entries)
        answered()
        for _, entry in ipairs(entries or {}) do
          local lower = vim.fn.tolower(entry.name)
          names[lower] = names[lower] or {}
          table.insert(names[lower], entry.name)
        end
        if not entries then
          vim.uv.fs_closedir(handle, function() end)
          return settle(names)
        end
        read()
      end)
    end
    read()
  end, CHUNK)
end

--- A read of `target` starts for `look`; call the returned function when it answers (one that
--- waited past the bound is then no longer stuck).
---@param look gemini_companion.AtPathLook
---@param target string
---@return fun()
function H.reading(look, target)
  local read = { target = target }
  look.read = read
  return function()
    if look.read == read then
      look.read = nil
    end
    if read.late then
      stuck[target] = stuck[target] > 1 and stuck[target] - 1 or nil
    end
  end
end

--- Whether `path` is, or is under, a path or folder whose read is stuck.
---@param path string
---@return boolean
function H.stuck(path)
  for target in pairs(stuck) do
    if path == target or vim.startswith(path, target == '/' and '/' or target .. '/') then
      return true
    end
  end
  return false
end

return M
