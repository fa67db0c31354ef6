--[[
  Where a delivery's line is in a project's `of` hash, and how its entry id and group are written
  in it: put before each grouping script that reads lines (grouping-script.ts), as Lua scripts in
  Redis have no include.
]]
-- A delivery's line field (similar-keys.ts, lineField): its record id when its key is made of
-- it, else a colon and its key. A line written before this version is under the key itself.
local function fieldOf(key)
  local prefix = 'feedback.created:'
  local rest = string.sub(key, #prefix + 1)
  if string.sub(key, 1, #prefix) == prefix and string.sub(rest, 1, 1) ~= ':' then return rest end
  return ':' .. key
end

-- A delivery's line and where it is (its field, or its key for a line written before); nil and
-- its field when it has none. `of` is the project's hash of lines.
local function lineOf(of, key)
  local field = fieldOf(key)
  local value = redis.call('HGET', of, field)
  if value then return value, field end
  value = redis.call('HGET', of, key)
  if value then return value, key end
  return nil, field
end

-- A line's entry id and group (stored-grouping.ts): the entry id in base 36 (`ms`, or `ms.seq`),
-- the group empty for the entry id itself, else how many ms before it its entry is, in base 36
-- (`.seq`; `_d`, `_d2`, ... for a detached group's `.d`, `.d2`, ...). A line written before keeps
-- both in full: its entry field has a dash.
local DIGITS36 = '0123456789abcdefghijklmnopqrstuvwxyz'

local function base36(n)
  if n < 0 then return '-' .. base36(-n) end
  local text = ''
  repeat
    local digit = n % 36
    text = string.sub(DIGITS36, digit + 1, digit + 1) .. text
    n = (n - digit) / 36
  until n == 0
  return text
end

local function from36(text)
  if string.sub(text, 1, 1) == '-' then return -from36(string.sub(text, 2)) end
  return tonumber(text, 36)
end

-- `ms` or `ms.seq` in base 36, and a detached group's mark (`.d`, `.d2`, ...; '' for none).
local function fieldParts(field)
  local number, detached = string.match(field, '^(.-)_(d%d*)$')
  if number then field = number end
  local ms, seq = string.match(field, '^(-?[0-9a-z]+)%.?([0-9a-z]*)$')
  return from36(ms), seq == '' and 0 or from36(seq), detached and '.' .. detached or ''
end

-- A line's entry id and group id, in full, from its first two fields.
local function idsOfLine(entryField, groupField)
  if string.find(entryField, '-', 1, true) then
    return entryField, groupField == '' and entryField or groupField
  end
  local ms, seq = fieldParts(entryField)
  local entry = string.format('%d-%d', ms, seq)
  if groupField == '' then return entry, entry end
  local back, groupSeq, detached = fieldParts(groupField)
  return entry, string.format('%d-%d', ms - back, groupSeq) .. detached
end

-- The first two fields of a line: its entry id (`ms-seq`) and its group id, as stored.
local function lineIdFields(entry, group)
  local ms, seq = string.match(entry, '^(%d+)-(%d+)$')
  ms, seq = tonumber(ms), tonumber(seq)
  local entryField = base36(ms) .. (seq == 0 and '' or '.' .. base36(seq))
  if group == entry then return entryField, '' end
  local groupMs, groupSeq, detached = string.match(group, '^(%d+)-(%d+)(.*)$')
  groupMs, groupSeq = tonumber(groupMs), tonumber(groupSeq)
  local groupField = base36(ms - groupMs) .. (groupSeq == 0 and '' or '.' .. base36(groupSeq))
  return entryField, groupField .. (string.gsub(detached, '^%.', '_'))
end
