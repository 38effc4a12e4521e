--- Checking options against the schema (config.lua): the checks its entries are written with
--- (each says what it accepts, in the words an error shows), the defaults it gives, and the
--- validation of a setup() table: a wrong value raises one line naming the option, an unknown
--- key is dropped with a warning naming the nearest valid key.
local message = require('gemini_companion.message')

local M = {}
local H = {}

---@class gemini_companion.Check
---@field expected string
---@field ok fun(value: any): boolean

---@param expected string
---@param ok fun(value: any): boolean
---@return gemini_companion.Check
function M.check(expected, ok)
  return { expected = expected, ok = ok }
end

M.BOOLEAN = M.check('a boolean', function(v)
  return type(v) == 'boolean'
end)

---@param min integer
function M.integer_from(min)
  local words = min == 1 and 'an integer >= 1' or ('an integer >= %d'):format(min)
  return M.check(words, function(v)
    return type(v) == 'number' and v == math.floor(v) and v >= min and v < math.huge
  end)
end

--- An option that takes one of a few strings, the first its default.
---@param doc string
---@param ... string
---@return gemini_companion.Option
function M.choice(doc, ...)
  local values, allowed = { ... }, {}
  for _, value in ipairs(values) do
    allowed[value] = true
  end
  local words = ("'%s' or '%s'"):format(table.concat(values, "', '", 1, #values - 1), values[#values])
  return {
    doc = doc,
    default = values[1],
    check = M.check(words, function(v)
      return allowed[v] == true
    end),
  }
end

M.POSITIVE = M.check('a number > 0', function(v)
  return type(v) == 'number' and v > 0 and v < math.huge
end)

--- A list of strings (maybe empty).
---@param v any
---@return boolean
function M.all_strings(v)
  if not vim.islist(v) then
    return false
  end
  for _, arg in ipairs(v) do
    if type(arg) ~= 'string' then
      return false
    end
  end
  return true
end

M.STRINGS = M.check('a non-empty list of strings', function(v)
  return M.all_strings(v) and #v > 0
end)

M.KEY = M.check('a key or false', function(v)
  return v == false or (type(v) == 'string' and v ~= '') -- '' is no key: vim.keymap.set refuses it
end)

--- The defaults, as the schema gives them.
---@param fields table<string, gemini_companion.Option>
---@return table
function M.defaults(fields)
  local out = {}
  for name, option in pairs(fields) do
    if option.fields then
      out[name] = M.defaults(option.fields)
    elseif option.default ~= nil then
      out[name] = vim.deepcopy(option.default)
    end
  end
  return out
end

--- Check `given` against `fields` in place: drop unknown keys (warned), raise on a wrong value.
---@param fields table<string, gemini_companion.Option>
---@param given table
---@param prefix string 'diff.', '' at the top
function M.validate(fields, given, prefix)
  for key in pairs(given) do
    if fields[key] == nil then
      H.warn_unknown(prefix, key, fields)
      given[key] = nil
    end
  end
  for name, option in pairs(fields) do
    H.check_option(option, given[name], prefix .. name)
  end
end

---@param path string
---@param expected string
---@param value any
function M.fail(path, expected, value)
  error(message.prefixed(('option %s: expected %s, got %s'):format(path, expected, vim.inspect(value))), 0)
end

-- Helpers

---@param option gemini_companion.Option
---@param value any
---@param path string
function H.check_option(option, value, path)
  if value == nil and option.optional then
    return
  end
  if not (option.fields or option.each) then
    if option.check and not option.check.ok(value) then
      M.fail(path, option.check.expected, value)
    end
    return
  end
  if type(value) ~= 'table' then
    M.fail(path, 'a table', value)
  end
  if option.fields and next(value) ~= nil and vim.islist(value) then -- a list took the defaults' place
    M.fail(path, 'a table of options', value)
  end
  if option.fields then
    return M.validate(option.fields, value, path .. '.')
  end
  for entry, spec in pairs(value) do
    local where = path .. '.' .. tostring(entry)
    if not option.key.ok(entry) then
      M.fail(where, option.key.expected, entry)
    elseif type(spec) ~= 'table' then
      M.fail(where, 'a table', spec)
    end
    M.validate(option.each.fields, spec, where .. '.')
  end
end

---@param prefix string
---@param key any
---@param fields table<string, gemini_companion.Option>
function H.warn_unknown(prefix, key, fields)
  local typed, nearest, best = tostring(key), nil, math.huge
  for name in pairs(fields) do
    -- Lengths too far apart are no typo (the distance is at least that), and cost #typed * #name.
    local distance = math.abs(#typed - #name) <= math.max(2, #name / 2) and H.distance(typed, name) or math.huge
    if distance < best or (distance == best and distance < math.huge and name < nearest) then
      nearest, best = name, distance
    end
  end
  local hint = nearest and best <= math.max(2, #nearest / 2) and (' (did you mean %s%s?)'):format(prefix, nearest) or ''
  local shown = #typed > 80 and typed:sub(1, 80) .. '…' or typed
  message.notify(('unknown option %s%s ignored%s'):format(prefix, shown, hint), 'warn')
end

--- Edit distance (insert, delete, substitute, swap two neighbours): how far a typo is from a key.
---@param a string
---@param b string
---@return integer
function H.distance(a, b)
  local rows = {}
  for i = 0, #a do
    rows[i] = { [0] = i }
  end
  for j = 1, #b do
    rows[0][j] = j
  end
  for i = 1, #a do
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      local d = math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        d = math.min(d, rows[i - 2][j - 2] + 1)
      end
      rows[i][j] = d
    end
  end
  return rows[#a][#b]
end

return M
