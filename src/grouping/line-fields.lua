--[[
  Where a delivery's line is in a project's `of` hash: put before each grouping script that reads
  lines (grouping-script.ts), as Lua scripts in Redis have no include.
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
