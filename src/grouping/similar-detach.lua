--[[
  An operator takes a delivery out of its group (similar-groups.ts): it becomes a group of its
  own, which its routing, run again, keeps (the join finds it joined). The old group keeps its
  first delivery and every other member; nothing is deleted but the delivery's membership.
  A group of one keeps no members key and is not in the project's groups (similar-join.lua): the
  new group has neither.
  KEYS[1] the `of` hash, KEYS[2] the groups zset, KEYS[3] the stream.
  ARGV: 1 key base, 2 delivery key.
  Returns 'detached', 'alone' (in a group of its own already) or 'not-found'.
]]
local of, groups, docs = KEYS[1], KEYS[2], KEYS[3]
local base, key = ARGV[1], ARGV[2]

local value, where = lineOf(of, key)
if not value or string.sub(value, 1, 8) == 'pending:' then return 'not-found' end
-- The stored grouping (stored-grouping.ts).
local entryField, groupField, _, t, _, m = string.match(value, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|')
local e, g = idsOfLine(entryField, groupField)
-- Its own group's id is its entry id. Its own group with no members key is a group of one.
local own = e
local old = base .. 'group:' .. g
if g == own .. '.d' or (g == own and redis.call('ZCARD', old) <= 1) then
  return 'alone'
end
-- The first of a group that others joined leaves its id to them.
local new = own
if g == own then new = own .. '.d' end

redis.call('ZREM', old, where)
if redis.call('ZCARD', old) == 0 then redis.call('ZREM', groups, g) end
-- Its new group is of one: no members key, and not in the project's groups (similar-join.lua).
-- Its arrival stays as stored (stored-grouping.ts).
local recordId = ''
local entry = redis.call('XRANGE', docs, e, e)
if entry[1] then
  local fields = entry[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'r' then recordId = fields[i + 1] end
  end
end
local firstKey = key
if key == 'feedback.created:' .. recordId then firstKey = '' end
local first = string.len(recordId) .. ':' .. recordId .. firstKey
local newEntryField, newGroupField = lineIdFields(e, new)
redis.call('HSET', of, where, table.concat({ newEntryField, newGroupField, '1', t, '', m, first }, '|'))
return 'detached'
